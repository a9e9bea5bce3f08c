#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardAPI
import PlugboardConcurrency

/// The server core in process, for tests (SwiftNIO's `EmbeddedChannel` and
/// `EmbeddedEventLoop` are the model): one ``EventLoop`` that never starts a thread,
/// turned by the caller on a clock the caller sets, and clients that are socket pairs, not
/// ports. The same ``Connection`` and handler run as under ``HTTPServer``; HTTP behaviour
/// (framing, keep-alive, pipelining, half closes, refusals, timeouts) is tested without a
/// listener, and a timeout without waiting for it:
///
/// ```swift
/// let server = try EmbeddedHTTPServer(handler: app)
/// let client = try server.connect()
/// try server.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
/// let answer = try server.response(on: client)
/// server.advance(by: 61)                       // past the idle timeout, at once
/// #expect(try server.isClosed(client))
/// ```
///
/// One thread drives it. Handler tasks run where Swift runs them; their answers reach the
/// loop through its queue, which ``run(until:timeoutSeconds:)`` waits on (the bound in
/// real seconds only says "this hung").
final class EmbeddedHTTPServer {
    let configuration: ServerConfiguration
    let loop: EventLoop
    private let core: ServerCore
    private let handler: any HTTPHandler
    /// The loop's clock: it moves only by ``advance(by:)``.
    private(set) var time: Double
    private var clients: [Client] = []
    /// How long, in real time, a wait may take before it counts as a hang: generous, since
    /// a handler's task waits for a thread of the cooperative pool, which a sanitizer's
    /// run beside CPU-heavy suites on two cores kept busy for half a minute.
    static let hangSeconds = 120.0
    private var ended = false

    /// The client's end of one connection and what it has read.
    final class Client {
        let fd: Int32
        let peer: String
        /// Every byte the server wrote to this client so far.
        fileprivate(set) var received: [UInt8] = []
        /// Where the next ``EmbeddedHTTPServer/response(on:head:)`` starts in `received`.
        fileprivate var consumed = 0
        /// The server closed its side (end of input was read).
        fileprivate(set) var endOfInput = false
        /// The server reset the connection, or it broke otherwise (`errno`).
        fileprivate(set) var error: Int32?
        fileprivate var closed = false
        /// The client reads nothing (a slow or stalled reader) until this is false again.
        var stalled = false

        fileprivate init(fd: Int32, peer: String) {
            self.fd = fd
            self.peer = peer
        }
    }

    /// What a client read: one answer.
    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        /// The first value of `name`, compared without case.
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(configuration: ServerConfiguration = ServerConfiguration(), handler: any HTTPHandler,
         logger: Logger = .disabled, time: Double = 1_000) throws(EventLoopError) {
        self.configuration = configuration
        self.handler = handler
        self.time = time
        core = ServerCore(configuration: configuration, logger: logger)
        loop = try EventLoop(index: 0)
        loop.embed(now: time)
    }

    deinit {
        shutdown()
    }

    /// Request and response bytes the connections hold now.
    var bufferedBytes: Int { core.budget.inUse }

    /// Connections open now.
    var openConnections: Int { core.limits.open }

    /// A new connection, as the listener accepts one from `peer`.
    func connect(peer: String = "127.0.0.1") throws -> Client {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Failure(description: "socketpair failed: \(String(cString: strerror(errno)))")
        }
        _ = plugboard_set_nonblocking(pair[0])
        _ = plugboard_set_nonblocking(pair[1])
        if core.limits.admit(peer: peer) != nil {
            Glibc.close(pair[0])
            Glibc.close(pair[1])
            throw Failure(description: "the connection limits refuse another connection from \(peer)")
        }
        let registered = loop.runAsLoopThread {
            Connection(fd: pair[0], peer: peer, server: core, handler: handler, loop: loop, now: time).register()
        }
        guard registered else {
            core.limits.release(peer: peer)
            Glibc.close(pair[0])
            Glibc.close(pair[1])
            throw Failure(description: "epoll refused the connection's socket")
        }
        let client = Client(fd: pair[1], peer: peer)
        clients.append(client)
        return client
    }

    // MARK: turning the loop

    /// Runs what is ready now: events, queued work, and a tick if one is due.
    func runPending() {
        turn(waitingMilliseconds: 0)
    }

    /// One turn of the loop, waiting up to `waitingMilliseconds` for an event, then what
    /// the server wrote read by its clients.
    private func turn(waitingMilliseconds: Int32) {
        loop.runAsLoopThread { loop.turn(timeoutMilliseconds: waitingMilliseconds) }
        for client in clients { drain(client) }
    }

    /// Turns the loop until `condition` holds, waiting for events and for the handlers'
    /// tasks; throws when it does not hold within `timeoutSeconds` of real time.
    func run(until condition: () throws -> Bool, timeoutSeconds: Double = EmbeddedHTTPServer.hangSeconds) throws {
        let deadline = MonotonicClock.now() + timeoutSeconds
        runPending()
        while try !condition() {
            guard MonotonicClock.now() < deadline else {
                throw Failure(description: "the embedded server did not get there within \(timeoutSeconds) s")
            }
            turn(waitingMilliseconds: 20)
        }
    }

    /// Moves the clock on by `seconds` and runs what that makes due (deadlines: a tick).
    func advance(by seconds: Double) {
        time += seconds
        loop.runAsLoopThread { loop.setTime(time) }
        runPending()
    }

    // MARK: a client's side

    /// Writes `bytes` from `client`, turning the loop while its socket buffer is full.
    func send(_ bytes: [UInt8], on client: Client, timeoutSeconds: Double = EmbeddedHTTPServer.hangSeconds) throws {
        let deadline = MonotonicClock.now() + timeoutSeconds
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
                continue
            }
            let code = errno
            guard n < 0, code == EAGAIN || code == EWOULDBLOCK || code == EINTR else {
                throw Failure(description: "the client could not send: \(String(cString: strerror(code)))")
            }
            guard MonotonicClock.now() < deadline else {
                throw Failure(description: "the server took no more of the client's bytes for \(timeoutSeconds) s (\(sent) of \(bytes.count) sent)")
            }
            // The server reads when its loop turns; until then the socket's buffer is full.
            turn(waitingMilliseconds: 10)
        }
        runPending()
    }

    func send(_ text: String, on client: Client) throws {
        try send(Array(text.utf8), on: client)
    }

    /// The client's side says it will send nothing more (a half close).
    func shutdownWrite(_ client: Client) {
        Glibc.shutdown(client.fd, Int32(SHUT_WR))
        runPending()
    }

    /// The client goes away.
    func close(_ client: Client) {
        guard !client.closed else { return }
        client.closed = true
        Glibc.close(client.fd)
        runPending()
    }

    /// The next whole answer `client` reads (an interim `100 Continue` is one), turning
    /// the loop until it has arrived; `head`: it answers a HEAD request, so has no body.
    func response(on client: Client, head: Bool = false, timeoutSeconds: Double = EmbeddedHTTPServer.hangSeconds) throws -> Response {
        var parsed: (Response, Int)?
        try run(until: {
            parsed = try Self.parse(client.received, from: client.consumed, head: head, ended: client.endOfInput)
            if parsed == nil, client.endOfInput || client.error != nil {
                throw Failure(description: "the connection ended before a whole answer; read: \(String(decoding: client.received[client.consumed...], as: UTF8.self))")
            }
            return parsed != nil
        }, timeoutSeconds: timeoutSeconds)
        let (response, end) = parsed!
        client.consumed = end
        return response
    }

    /// Whether the server has closed the connection (the client read its end of input),
    /// after what is ready now has run.
    func isClosed(_ client: Client) -> Bool {
        runPending()
        return client.endOfInput || client.error != nil
    }

    /// What the server wrote that no ``response(on:head:timeoutSeconds:)`` has taken.
    func unread(_ client: Client) -> [UInt8] {
        runPending()
        return Array(client.received[client.consumed...])
    }

    /// Reads what the server wrote to `client` without waiting.
    private func drain(_ client: Client) {
        guard !client.closed, !client.stalled, !client.endOfInput, client.error == nil else { return }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                client.received += buffer[0..<n]
                continue
            }
            if n == 0 {
                client.endOfInput = true
                return
            }
            let code = errno
            if code == EINTR { continue }
            if code != EAGAIN && code != EWOULDBLOCK { client.error = code }
            return
        }
    }

    /// One answer from `bytes[start...]` and where it ends, or nil while incomplete.
    private static func parse(_ bytes: [UInt8], from start: Int, head: Bool, ended: Bool) throws -> (Response, Int)? {
        guard let headEnd = find([13, 10, 13, 10], in: bytes, from: start) else { return nil }
        let lines = split(Array(bytes[start..<headEnd]), by: [13, 10])
        let statusLine = String(decoding: lines[0], as: UTF8.self)
        let statusParts = statusLine.split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw Failure(description: "not a status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw Failure(description: "not a header line: \(String(decoding: line, as: UTF8.self))")
            }
            let value = line[(colon + 1)...].drop { $0 == 32 || $0 == 9 }
            headers.append((String(decoding: line[..<colon], as: UTF8.self),
                            String(decoding: value.reversed().drop { $0 == 32 || $0 == 9 }.reversed(), as: UTF8.self)))
        }
        var response = Response(status: status, headers: headers, body: [])
        let bodyStart = headEnd + 4
        if head || status < 200 || status == 204 || status == 304 { return (response, bodyStart) }
        if response.header("transfer-encoding")?.lowercased() == "chunked" {
            var at = bodyStart
            while true {
                guard let lineEnd = find([13, 10], in: bytes, from: at) else { return nil }
                let sizeText = String(decoding: bytes[at..<lineEnd].prefix { $0 != UInt8(ascii: ";") && $0 != 32 }, as: UTF8.self)
                guard let size = Int(sizeText, radix: 16) else {
                    throw Failure(description: "not a chunk size: \(sizeText)")
                }
                if size == 0 {
                    guard let trailerEnd = find([13, 10, 13, 10], in: bytes, from: lineEnd) else { return nil }
                    return (response, trailerEnd + 4)
                }
                guard bytes.count >= lineEnd + 2 + size + 2 else { return nil }
                response.body += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
                at = lineEnd + 2 + size + 2
            }
        }
        if let lengthText = response.header("content-length") {
            guard let length = Int(lengthText) else { throw Failure(description: "not a length: \(lengthText)") }
            guard bytes.count >= bodyStart + length else { return nil }
            response.body = Array(bytes[bodyStart..<(bodyStart + length)])
            return (response, bodyStart + length)
        }
        // Delimited by the close.
        guard ended else { return nil }
        response.body = Array(bytes[bodyStart...])
        return (response, bytes.count)
    }

    private static func split(_ bytes: [UInt8], by separator: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var at = 0
        while let end = find(separator, in: bytes, from: at) {
            parts.append(bytes[at..<end])
            at = end + separator.count
        }
        parts.append(bytes[at...])
        return parts
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count - start >= needle.count else { return nil }
        var i = start
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0] && bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    // MARK: ending

    /// Ends every connection (their tasks are cancelled) and the loop, and closes the
    /// clients' ends.
    func shutdown() {
        guard !ended else { return }
        ended = true
        loop.runAsLoopThread {
            for case let connection as Connection in loop.registeredSources() { connection.abort() }
        }
        loop.end()
        for client in clients where !client.closed {
            client.closed = true
            Glibc.close(client.fd)
        }
        clients = []
    }
}
