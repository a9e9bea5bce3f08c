#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardAPI
import PlugboardConcurrency
import Dispatch

/// An HTTP/1.1 server on ``ServerConfiguration/eventLoops`` `epoll` loops, in nginx's and
/// SwiftNIO's shape: non-blocking sockets, every connection owned by one loop, request
/// handlers run as Swift tasks, bodies streamed both ways with backpressure. An idle
/// connection costs a few KiB, not a thread.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 0), handler: app, logger: logger)
/// let port = try server.start()
/// // ... server.stop() (or a byte on `stopDescriptor` from a signal handler)
/// await server.stopped(drainTimeoutSeconds: 10)
/// ```
public final class HTTPServer: Sendable {
    public let configuration: ServerConfiguration
    private let core: ServerCore
    /// The wake pipe: [read, write].
    private let wake: (Int32, Int32)
    private let loops = LockedValueBox<[EventLoop]>([])
    private let state = LockedValueBox(StopState())
    /// Signalled once the listener is closed.
    private let stopSignal = DispatchSemaphore(value: 0)

    private struct StopState {
        var stopping = false
        var listeners: [Int32] = []
        var ports: [Int] = []
        var loopsDetached = 0
        var acceptDone = false
    }

    /// A further address the server listens on, with a handler of its own (the S3 front
    /// end beside the native API). Its connections run on the same loops, under the same
    /// limits, buffer budget and timeouts as the main listener's.
    public struct Endpoint: Sendable {
        public var host: String
        public var port: Int
        public var handler: any HTTPHandler

        public init(host: String, port: Int, handler: any HTTPHandler) {
            self.host = host
            self.port = port
            self.handler = handler
        }
    }

    private let endpoints: [Endpoint]

    /// `additionalEndpoints` listen beside `configuration`'s host and port, each with its
    /// own handler.
    public init(configuration: ServerConfiguration, handler: any HTTPHandler, logger: Logger,
                additionalEndpoints: [Endpoint] = []) {
        self.configuration = configuration
        core = ServerCore(configuration: configuration, logger: logger)
        endpoints = [Endpoint(host: configuration.host, port: configuration.port, handler: handler)] + additionalEndpoints
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            _ = plugboard_set_nonblocking(fds[0])
        } else {
            fds = [-1, -1]
        }
        wake = (fds[0], fds[1])
    }

    /// The wake pipe is the server's until it is gone: a stop signal may still write to
    /// it after `stopped` returned, so its numbers must not be reused before.
    deinit {
        if wake.0 >= 0 { close(wake.0) }
        if wake.1 >= 0 { close(wake.1) }
    }

    /// Writing one byte here stops the server; `write(2)` is async-signal-safe, so a
    /// signal handler may do it.
    public var stopDescriptor: Int32 { wake.1 }

    /// Binds, listens and starts the event loops; returns the port listened on (the
    /// additional endpoints' are ``additionalPorts``).
    public func start() throws(PlugboardError) -> Int {
        guard wake.0 >= 0 else {
            throw PlugboardError(.httpListenFailed, "could not create the server's wake pipe: \(String(cString: strerror(errno)))")
        }
        // Every connection is a descriptor: the soft limit (often 1024) would refuse
        // connections long before --max-connections.
        let openFiles = plugboard_raise_open_files_limit()
        if openFiles >= 0 && openFiles < configuration.maxConnections + 64 {
            core.logger.warning("the open-files limit (\(openFiles)) is below --max-connections (\(configuration.maxConnections)); connections beyond it are refused",
                                metadata: ["hint": "Raise it with ulimit -n or LimitNOFILE= in the service unit."])
        }
        var bound: [(Int32, Int)] = []
        for endpoint in endpoints {
            do throws(PlugboardError) {
                let (fd, port) = try Socket.listen(host: endpoint.host, port: endpoint.port)
                _ = plugboard_set_nonblocking(fd)
                bound.append((fd, port))
            } catch {
                for (fd, _) in bound { close(fd) }
                throw error
            }
        }
        var started: [EventLoop] = []
        do throws(EventLoopError) {
            for i in 0..<max(1, configuration.eventLoops) {
                let loop = try EventLoop(index: i)
                try loop.start()
                started.append(loop)
            }
        } catch {
            for loop in started { loop.shutdown() }
            for (fd, _) in bound { close(fd) }
            throw PlugboardError(.httpListenFailed, "could not start the server's event loops: \(error.message)",
                                 hint: "Check the process's limits (ulimit -n, ulimit -u).")
        }
        loops.withLock { $0 = started }
        state.withLock {
            $0.listeners = bound.map(\.0)
            $0.ports = bound.map(\.1)
        }
        let core = self.core
        for loop in started {
            for (i, (fd, _)) in bound.enumerated() {
                let handler = endpoints[i].handler
                loop.execute {
                    Listener(fd: fd, core: core, handler: handler, loop: loop).attach()
                }
            }
        }
        let wakeFD = wake.0
        let first = started[0]
        first.execute {
            let waker = Waker(fd: wakeFD) { [weak self] in self?.beginStop() }
            _ = first.register(wakeFD, events: UInt32(PLUGBOARD_EPOLL_IN), source: waker)
        }
        return bound[0].1
    }

    /// The ports of the additional endpoints, in their order, once started.
    public var additionalPorts: [Int] { Array(state.withLock { $0.ports }.dropFirst()) }

    /// Stops accepting; connections finish the request they are in and close.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.1, &byte, 1)
    }

    /// Waits until the listener is closed and every connection is closed, at most
    /// `timeoutSeconds`; returns the connections still open (0 when drained).
    @discardableResult
    public func waitUntilDrained(timeoutSeconds: Double) -> Int {
        let deadline = MonotonicClock.now() + timeoutSeconds
        while MonotonicClock.now() < deadline {
            if state.withLock({ $0.acceptDone }) && core.limits.open == 0 { return 0 }
            usleep(10_000)
        }
        return core.limits.open
    }

    /// Waits, off Swift's cooperative pool, until the server is asked to stop, then until
    /// its connections close or `drainTimeoutSeconds` pass. Connections still busy then
    /// are closed, their requests' tasks cancelled, so that nothing still runs when the
    /// caller goes on to stop the services those requests use. Returns how many were
    /// still busy at the timeout.
    ///
    /// `stopping` runs once the listener is closed, before the wait for requests in flight.
    public func stopped(drainTimeoutSeconds: Double, stopping: @escaping @Sendable () -> Void = {}) async -> Int {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let spawned = Threads.spawn {
                self.stopSignal.wait()
                self.stopSignal.signal()
                stopping()
                let open = self.waitUntilDrained(timeoutSeconds: drainTimeoutSeconds)
                if open > 0 {
                    self.forEachConnection { $0.abort() }
                    self.waitUntilDrained(timeoutSeconds: 2)
                }
                for loop in self.loops.withLock({ $0 }) { loop.shutdown() }
                continuation.resume(returning: open)
            }
            if !spawned { continuation.resume(returning: core.limits.open) }
        }
    }

    /// Connections open now.
    public var openConnections: Int { core.limits.open }

    /// Request and response bytes held in memory now, all connections together (tests).
    var bufferedBytes: Int { core.budget.inUse }

    /// Runs on loop 0 when a byte arrives on the wake pipe.
    private func beginStop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else { return }
        let all = loops.withLock { $0 }
        for loop in all {
            loop.execute {
                for source in loop.registeredSources() {
                    if let listener = source as? Listener { listener.detach() }
                    if let connection = source as? Connection { connection.stop() }
                    if let refused = source as? RefusedConnection { refused.finish(loop) }
                }
                self.loopDetached(total: all.count)
            }
        }
    }

    /// Once no loop watches the listener any more, it is closed.
    private func loopDetached(total: Int) {
        let listeners = state.withLock { s -> [Int32]? in
            s.loopsDetached += 1
            guard s.loopsDetached == total else { return nil }
            s.acceptDone = true
            defer { s.listeners = [] }
            return s.listeners
        }
        guard let listeners else { return }
        for listener in listeners where listener >= 0 { close(listener) }
        stopSignal.signal()
    }

    private func forEachConnection(_ body: @escaping @Sendable (Connection) -> Void) {
        for loop in loops.withLock({ $0 }) {
            loop.execute {
                for case let connection as Connection in loop.registeredSources() { body(connection) }
            }
        }
    }
}

/// What every loop of one server shares.
final class ServerCore: Sendable {
    let configuration: ServerConfiguration
    let logger: Logger
    let budget: BufferBudget
    let limits: ConnectionLimits

    init(configuration: ServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        budget = BufferBudget(limit: configuration.maxBufferedBytes)
        limits = ConnectionLimits(maxConnections: configuration.maxConnections,
                                  maxPerClient: configuration.maxConnectionsPerClient)
    }
}

/// The read end of the wake pipe on loop 0: a byte means stop.
final class Waker: EventSource {
    let fd: Int32
    let onWake: () -> Void

    init(fd: Int32, onWake: @escaping () -> Void) {
        self.fd = fd
        self.onWake = onWake
    }

    func ready(_ events: UInt32, loop: EventLoop) {
        var scratch = [UInt8](repeating: 0, count: 64)
        while scratch.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        onWake()
    }

    func tick(_ now: Double, loop: EventLoop) {}
}
