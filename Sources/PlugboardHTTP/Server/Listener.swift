#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardAPI
import PlugboardConcurrency

/// The listening socket as one loop sees it. Every loop watches the same socket with
/// EPOLLEXCLUSIVE, so the kernel wakes one of them per arriving connection.
final class Listener: EventSource {
    let fd: Int32
    private let core: ServerCore
    private let handler: any HTTPHandler
    private unowned let loop: EventLoop
    private var id: UInt64?
    /// Out of descriptors: the listener waits a tick instead of spinning on it.
    private var backingOff = false
    private var lastWarning = 0.0
    /// Refused connections lingering on this loop (``RefusedConnection``).
    private var lingering = 0
    /// Beyond this many at once, a refused connection is closed at once: under a flood of
    /// connections, lingering must not hold descriptors of its own.
    static let maxLingering = 256

    init(fd: Int32, core: ServerCore, handler: any HTTPHandler, loop: EventLoop) {
        self.fd = fd
        self.core = core
        self.handler = handler
        self.loop = loop
    }

    private static let interest = UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_EXCLUSIVE)

    func attach() {
        id = loop.register(fd, events: Self.interest, source: self)
        if id == nil { core.logger.error("could not watch the listening socket", metadata: ["loop": .string(String(loop.index))]) }
    }

    func detach() {
        guard let id else { return }
        loop.remove(fd, id: id)
        self.id = nil
    }

    func ready(_ events: UInt32, loop: EventLoop) {
        for _ in 0..<64 {
            let client = plugboard_accept(fd)
            if client >= 0 {
                admit(client)
                continue
            }
            let code = errno
            if code == EINTR || code == ECONNABORTED { continue }
            if code == EMFILE || code == ENFILE {
                let now = MonotonicClock.now()
                if now - lastWarning > 5 {
                    lastWarning = now
                    core.logger.warning("out of file descriptors; accepting again shortly",
                                        metadata: ["open": .string(String(core.limits.open))])
                }
                // EPOLLEXCLUSIVE cannot be modified: leave the listener, come back next tick.
                if let id { loop.remove(fd, id: id) }
                id = nil
                backingOff = true
            }
            return
        }
    }

    func tick(_ now: Double, loop: EventLoop) {
        guard backingOff else { return }
        backingOff = false
        attach()
    }

    private func admit(_ client: Int32) {
        let peer = Socket.peerName(client)
        if let refusal = core.limits.admit(peer: peer) {
            refuse(client, peer: peer, refusal)
            return
        }
        Socket.setNoDelay(client)
        let connection = Connection(fd: client, peer: peer, server: core, handler: handler, loop: loop, now: MonotonicClock.now())
        if !connection.register() {
            core.limits.release(peer: peer)
            close(client)
        }
    }

    /// Over a limit: a 503 written without waiting (what the socket takes at once), the
    /// server's side shut, then a short linger that reads what the client sends, so that
    /// its request is not answered by a reset before it reads the 503.
    private func refuse(_ client: Int32, peer: String, _ refusal: ConnectionLimits.Refusal) {
        let c = core.configuration
        let error: HTTPError
        switch refusal {
        case .full:
            error = HTTPError(503, PlugboardError(.httpUnavailable, "too many connections",
                detail: "The server holds at most \(c.maxConnections) connections.",
                hint: "Retry shortly, or start the server with a larger --max-connections."),
                headers: [("Retry-After", "1")])
        case .clientFull:
            error = HTTPError(503, PlugboardError(.httpUnavailable, "too many connections from \(peer)",
                detail: "The server holds at most \(c.maxConnectionsPerClient) connections from one address.",
                hint: "Reuse connections (keep-alive), or start the server with a larger --max-connections-per-client."),
                headers: [("Retry-After", "1")])
        }
        let response = handler.refusal(error, head: nil)
        let bytes = response.serialize(head: false, keepAlive: false, date: loop.httpDate)
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        handler.completed(Exchange(method: "-", target: "-", status: 503, bytes: response.body.count,
                                        durationSeconds: 0, peer: peer))
        shutdown(client, Int32(SHUT_WR))
        guard lingering < Self.maxLingering else {
            close(client)
            return
        }
        lingering += 1
        RefusedConnection.linger(client, on: loop) { [weak self] in self?.lingering -= 1 }
    }
}
