#if canImport(Glibc)
import Glibc
#endif

/// A connection's socket as a ``ByteSource``, with a deadline for each phase: idle
/// connections are closed quietly, a head that trickles in or a body slower than the
/// minimum rate gets 408.
struct SocketSource: ByteSource {
    let fd: Int32
    let id: Int
    let configuration: ServerConfiguration
    let registry: ConnectionRegistry
    /// When the current request's first byte arrived (or was found buffered).
    var requestStarted = 0.0
    private var bodyStarted: Double?
    private var bodyBytes = 0
    private var timeoutSet = -1.0

    init(fd: Int32, id: Int, configuration: ServerConfiguration, registry: ConnectionRegistry) {
        self.fd = fd
        self.id = id
        self.configuration = configuration
        self.registry = registry
    }

    /// Marks the start of the next request.
    mutating func beginRequest() {
        requestStarted = Clock.now()
        bodyStarted = nil
        bodyBytes = 0
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer, phase: ReadPhase) throws(HTTPError) -> Int {
        let now = Clock.now()
        switch phase {
        case .idle:
            // A server that is stopping takes no new request on this connection.
            guard registry.setIdle(id, true) else { return 0 }
            setTimeout(configuration.idleTimeoutSeconds)
        case .head:
            let remaining = requestStarted + configuration.headerTimeoutSeconds - now
            guard remaining > 0 else { throw headTimeout() }
            setTimeout(remaining)
        case .body:
            let started = bodyStarted ?? now
            bodyStarted = started
            let elapsed = now - started
            if elapsed > configuration.bodyTimeoutSeconds
                && Double(bodyBytes) / elapsed < Double(configuration.minBodyBytesPerSecond) {
                throw HTTPError.timeout("request body too slow",
                                        detail: "\(bodyBytes) bytes in \(Int(elapsed)) s; the minimum is \(configuration.minBodyBytesPerSecond) bytes per second.")
            }
            setTimeout(configuration.bodyTimeoutSeconds)
        }
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 {
                if phase == .idle {
                    _ = registry.setIdle(id, false)
                    requestStarted = Clock.now()
                } else if phase == .body {
                    bodyBytes += n
                }
                return n
            }
            if n == 0 { return 0 }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                switch phase {
                case .idle: return 0
                case .head: throw headTimeout()
                case .body:
                    throw HTTPError.timeout("request body stalled",
                                            detail: "No byte arrived for \(configuration.bodyTimeoutSeconds) s.")
                }
            }
            return 0
        }
    }

    private mutating func setTimeout(_ seconds: Double) {
        // Only a changed value costs a system call; the common case (idle, whole request
        // in one read) sets it once per connection.
        guard abs(seconds - timeoutSet) > 0.05 else { return }
        Socket.setTimeout(fd, SO_RCVTIMEO, seconds: seconds)
        timeoutSet = seconds
    }

    private func headTimeout() -> HTTPError {
        HTTPError.timeout("request head not received in time",
                          detail: "The request line and headers must arrive within \(configuration.headerTimeoutSeconds) s.")
    }
}
