#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import Dispatch

/// An HTTP/1.1 server on plain sockets: one accept thread, one thread per connection (at
/// most ``ServerConfiguration/maxConnections``), blocking I/O bounded by socket timeouts.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 0), handler: app, logger: logger)
/// let port = try server.start()
/// // ... server.stop() (or a byte on `stopDescriptor` from a signal handler)
/// server.waitUntilDrained(timeoutSeconds: 10)
/// ```
public final class HTTPServer: Sendable {
    public let configuration: ServerConfiguration
    private let handler: any HTTPHandler
    private let logger: Logger
    private let registry = ConnectionRegistry()
    private let dates = HTTPDateCache()
    /// The wake pipe: [read, write].
    private let wake: (Int32, Int32)
    private let acceptDone = LockedValueBox(false)
    /// Signalled once the accept loop has ended.
    private let stopSignal = DispatchSemaphore(value: 0)

    public init(configuration: ServerConfiguration, handler: any HTTPHandler, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        } else {
            fds = [-1, -1]
        }
        wake = (fds[0], fds[1])
    }

    /// Writing one byte here stops the server; `write(2)` is async-signal-safe, so a
    /// signal handler may do it.
    public var stopDescriptor: Int32 { wake.1 }

    /// Binds, listens and starts accepting; returns the port listened on.
    public func start() throws(PlugboardError) -> Int {
        guard wake.0 >= 0 else {
            throw PlugboardError(.httpListenFailed, "could not create the server's wake pipe: \(String(cString: strerror(errno)))")
        }
        let (fd, port) = try Socket.listen(host: configuration.host, port: configuration.port)
        guard Threads.spawn({ self.acceptLoop(fd) }) else {
            close(fd)
            throw PlugboardError(.httpListenFailed, "could not start the accept thread")
        }
        return port
    }

    /// Stops accepting; connections finish the request they are in and close.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.1, &byte, 1)
    }

    /// Waits until the accept loop has ended and every connection is closed, at most
    /// `timeoutSeconds`; returns the connections still open (0 when drained).
    @discardableResult
    public func waitUntilDrained(timeoutSeconds: Double) -> Int {
        let deadline = Clock.now() + timeoutSeconds
        while Clock.now() < deadline {
            if acceptDone.withLock({ $0 }) && registry.openCount == 0 { return 0 }
            usleep(10_000)
        }
        return registry.openCount
    }

    /// Waits, off Swift's cooperative pool, until the server is asked to stop, then until
    /// its connections close or `drainTimeoutSeconds` pass; returns those still open.
    public func stopped(drainTimeoutSeconds: Double) async -> Int {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let spawned = Threads.spawn {
                self.stopSignal.wait()
                self.stopSignal.signal()
                continuation.resume(returning: self.waitUntilDrained(timeoutSeconds: drainTimeoutSeconds))
            }
            if !spawned { continuation.resume(returning: registry.openCount) }
        }
    }

    /// Connections open now.
    public var openConnections: Int { registry.openCount }

    private func acceptLoop(_ listener: Int32) {
        // A process inherits its parent's blocked signals (test runners and some
        // supervisors block SIGTERM and SIGINT); this thread takes them, so a stop signal
        // always reaches its handler.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wake.0, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                logger.error("poll failed; the server stops accepting", metadata: ["errno": "\(errno)"])
                break
            }
            if fds[1].revents != 0 { break }
            guard fds[0].revents != 0 else { continue }
            let client = accept(listener, nil, nil)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            if client < 0 {
                if errno == EMFILE || errno == ENFILE {
                    // Out of descriptors: back off instead of spinning on the ready listener.
                    logger.warning("out of file descriptors; waiting before accepting again")
                    usleep(50_000)
                }
                continue
            }
            admit(client)
        }
        close(listener)
        registry.beginStop()
        acceptDone.withLock { $0 = true }
        stopSignal.signal()
    }

    private func admit(_ client: Int32) {
        guard let id = registry.add(client, limit: configuration.maxConnections) else {
            refuseOverLimit(client)
            return
        }
        let connection = Connection(fd: client, id: id, configuration: configuration, handler: handler,
                                    registry: registry, dates: dates)
        if !Threads.spawn(connection.run) {
            registry.remove(id)
            refuseOverLimit(client)
        }
    }

    private func refuseOverLimit(_ client: Int32) {
        let error = HTTPError(503, PlugboardError(.httpUnavailable, "too many connections",
            detail: "The server holds at most \(configuration.maxConnections) connections.",
            hint: "Retry shortly, or start the server with a larger --max-connections."),
            headers: [("Retry-After", "1")])
        let response = handler.refusal(error, head: nil)
        Socket.setTimeout(client, SO_SNDTIMEO, seconds: 1)
        _ = Socket.writeAll(client, response.serialize(head: false, keepAlive: false, date: dates.current()))
        handler.completed(Exchange(method: "-", target: "-", status: 503, bytes: response.body.count,
                                   durationSeconds: 0, peer: Socket.peerName(client)))
        shutdown(client, Int32(SHUT_WR))
        close(client)
    }
}
