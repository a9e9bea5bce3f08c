#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardConcurrency
import PlugboardTestSupport
import Testing

/// Every in-process server test, one at a time: some count the process's descriptors, some
/// measure time, and the machine has two cores.
@Suite(.serialized) struct ServerTests {}

struct WireError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The byte at offset `i` of every body the tests send and stream: a misplaced, lost or
/// repeated piece shows.
func pattern(_ i: Int) -> UInt8 { UInt8(i % 251) }

/// 256 periods of ``pattern(_:)``: a chunk that starts at a multiple of 251 continues it.
let patternBlock: [UInt8] = (0..<(251 * 256)).map(pattern)

/// `count` bytes of the pattern from offset 0.
func patternBytes(_ count: Int) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(count)
    while out.count < count { out += patternBlock.prefix(count - out.count) }
    return out
}

func isPattern(_ bytes: [UInt8], from offset: Int = 0) -> Bool {
    var i = offset
    for b in bytes {
        if b != pattern(i) { return false }
        i += 1
    }
    return true
}

/// Runs blocking client code on a thread of its own: a test blocked in `recv` on Swift's
/// cooperative pool (two threads here) would starve the server's own request tasks.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await OwnThread.run { Result { try body() } }.get()
}

/// Polls `condition` until it holds or `timeoutSeconds` pass (generous: CI machines are
/// loaded); returns whether it held.
func eventually(timeoutSeconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = MonotonicClock.now() + timeoutSeconds
    while MonotonicClock.now() < deadline {
        if try condition() { return true }
        usleep(5_000)
    }
    return try condition()
}

/// Waits until the streamed answers' producer is held back: nothing more produced over
/// a fifth of a second (or `timeoutSeconds`); returns whether it settled.
@discardableResult
func producerHeldBack(_ probe: Probe, timeoutSeconds: Double = 10) -> Bool {
    var last = -1
    return eventually(timeoutSeconds: timeoutSeconds) {
        let now = probe.produced
        defer { last = now }
        if now == last { usleep(200_000); return probe.produced == now }
        return false
    }
}

/// The process's open descriptors, by number.
func openDescriptors() -> Set<Int32> {
    var out = Set<Int32>()
    guard let dir = opendir("/proc/self/fd") else { return out }
    defer { closedir(dir) }
    let own = dirfd(dir)
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if let n = Int32(name), n != own { out.insert(n) }
    }
    return out
}

/// What descriptor `fd` of this process is (`socket:[123]`, `anon_inode:[eventpoll]`, a path).
func descriptorTarget(_ fd: Int32) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A small file read whole (a /proc table), or nil.
func readWholeFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var piece = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = piece.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { break }
        bytes += piece[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The socket inodes of TCP sockets whose local port is `port` (listening or accepted).
func socketInodes(onLocalPort port: Int) -> Set<String> {
    var inodes = Set<String>()
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let text = readWholeFile(table) else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, let local = fields[1].split(separator: ":").last, Int(local, radix: 16) == port else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    return inodes
}

/// Of the descriptors opened since `before`, those a server on `port` could have left:
/// its sockets (by the port) and event loop descriptors (epoll, eventfd). Other tests of
/// this process open descriptors of their own meanwhile, which are not counted.
func serverDescriptorsLeft(since before: Set<Int32>, port: Int) -> [String] {
    let serverSockets = socketInodes(onLocalPort: port)
    return openDescriptors().subtracting(before).sorted().compactMap { fd -> String? in
        guard let target = descriptorTarget(fd) else { return nil }
        if target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]" { return "\(fd) \(target)" }
        if target.hasPrefix("socket:["), serverSockets.contains(String(target.dropFirst(8).dropLast())) { return "\(fd) \(target)" }
        return nil
    }
}

/// A response as read off the wire.
struct WireResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    var text: String { String(decoding: body, as: UTF8.self) }
    var closes: Bool { header("connection")?.lowercased() == "close" }
}

/// A raw TCP client (blocking, with a receive timeout): sends exactly the bytes given and
/// parses responses itself. Used from one thread at a time.
final class Wire: @unchecked Sendable {
    let fd: Int32
    private(set) var buffer: [UInt8] = []

    /// `source` binds the client's address first (all of 127/8 is the loopback);
    /// `receiveBuffer` and `sendBuffer` set small kernel buffers, so that backpressure
    /// shows after little data.
    init(port: Int, source: String? = nil, timeoutSeconds: Int = 30, receiveBuffer: Int32? = nil,
         sendBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw WireError("socket failed: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        if var size = sendBuffer { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let rc = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else {
                throw WireError("bind to \(source) failed: \(String(cString: strerror(errno)))")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            throw WireError("connect to port \(port) failed: \(String(cString: strerror(errno)))")
        }
    }

    /// The one close of `fd`: a class whose initializer throws once every property is set
    /// is deinitialized, so the initializer's failure paths must not close it too (the
    /// second close would hit whatever descriptor another test's thread got the number for).
    deinit { if fd >= 0 { Glibc.close(fd) } }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw WireError("send failed: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Sends what the socket takes without blocking: the bytes taken, 0 when it is full.
    func sendSome(_ bytes: ArraySlice<UInt8>) throws -> Int {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        if n >= 0 { return n }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        throw WireError("send failed: \(String(cString: strerror(errno)))")
    }

    /// Waits up to `milliseconds` for the socket to take more.
    func waitWritable(milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&p, 1, milliseconds) == 1
    }

    /// A request with `Host` (and `Content-Length` for a body) filled in, and its answer.
    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                 version: String = "HTTP/1.1") throws -> WireResponse {
        try send(Self.requestBytes(method, target, headers: headers, body: body, version: version))
        return try response(head: method == "HEAD")
    }

    static func requestBytes(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                             version: String = "HTTP/1.1") -> [UInt8] {
        var text = "\(method) \(target) \(version)\r\nHost: test\r\n"
        for (k, v) in headers { text += "\(k): \(v)\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        return Array((text + "\r\n").utf8) + (body ?? [])
    }

    /// One response head: status and headers, with interim (1xx) responses returned too
    /// when `interim`.
    func head(interim: Bool = false) throws -> WireResponse {
        while true {
            let end = try headEnd()
            let lines = String(decoding: buffer[..<end], as: UTF8.self)
                .split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
            buffer.removeFirst(end + 4)
            guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
                  let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
                throw WireError("bad status line: \(lines.first ?? "")")
            }
            var headers: [(String, String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { throw WireError("bad header line \(line)") }
                headers.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...].drop { $0 == " " })))
            }
            if (100..<200).contains(status) && !interim { continue }
            return WireResponse(status: status, headers: headers, body: [])
        }
    }

    /// One response (its body by Content-Length; none for HEAD, 1xx, 204, 304).
    func response(head isHead: Bool = false) throws -> WireResponse {
        var response = try head()
        if isHead || response.status == 204 || response.status == 304 { return response }
        guard let length = response.header("content-length").flatMap({ Int($0) }) else {
            throw WireError("response without Content-Length")
        }
        response.body = try bytes(length)
        return response
    }

    /// Exactly `count` bytes; throws when the connection ends first.
    func bytes(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw WireError("closed after \(buffer.count) of \(count) bytes") }
        }
        let out = Array(buffer[..<count])
        buffer.removeFirst(count)
        return out
    }

    /// Reads and drops up to `count` body bytes, checking the pattern from `offset`;
    /// returns how many arrived before the end of the stream.
    func drain(_ count: Int, patternFrom offset: Int? = nil) throws -> (read: Int, intact: Bool) {
        var read = 0
        var intact = true
        while read < count {
            if buffer.isEmpty { guard try fill() else { break } }
            let take = min(buffer.count, count - read)
            if let offset, intact { intact = isPattern(Array(buffer[..<take]), from: offset + read) }
            buffer.removeFirst(take)
            read += take
        }
        return (read, intact)
    }

    /// Whether the server closed the connection: reads to the end (at most the timeout).
    func isClosedByServer() -> Bool {
        while true {
            do {
                if try !fill() { return true }
            } catch {
                return false
            }
        }
    }

    private func headEnd() throws -> Int {
        var from = 0
        while true {
            if buffer.count >= 4 {
                for i in from...(buffer.count - 4)
                where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    return i
                }
                from = buffer.count - 3
            }
            guard try fill() else { throw WireError("connection closed before a response head") }
        }
    }

    /// Reads more; false at the end of the stream (or a reset).
    @discardableResult
    func fill(max: Int = 65_536) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: max)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET { return false }
                throw WireError("recv failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return false }
            buffer += chunk[0..<n]
            return true
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads to the end: true when the server's side ended with a FIN, false on a reset
    /// (or nothing within the timeout).
    func endsWithoutReset() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { continue }
            if n == 0 { return true }
            if errno == EINTR { continue }
            return false
        }
    }
}

/// What the test handlers saw, for the tests to check.
final class Probe: Sendable {
    private struct State {
        var started: [String: Int] = [:]
        var cancelled: [String: Int] = [:]
        var finished: [String: Int] = [:]
        var produced = 0
        var bodyRead = 0
        var gateOpen = false
        var exchanges: [Exchange] = []
    }
    // LockedValueBox, not Synchronization.Mutex: ThreadSanitizer sees its pthread lock.
    private let state = LockedValueBox(State())

    func start(_ path: String) { state.withLock { $0.started[path, default: 0] += 1 } }
    func cancel(_ path: String) { state.withLock { $0.cancelled[path, default: 0] += 1 } }
    func finish(_ path: String) { state.withLock { $0.finished[path, default: 0] += 1 } }
    func started(_ path: String) -> Int { state.withLock { $0.started[path] ?? 0 } }
    func cancelled(_ path: String) -> Int { state.withLock { $0.cancelled[path] ?? 0 } }
    func finished(_ path: String) -> Int { state.withLock { $0.finished[path] ?? 0 } }
    func produce(_ n: Int) { state.withLock { $0.produced += n } }
    var produced: Int { state.withLock { $0.produced } }
    func read(_ n: Int) { state.withLock { $0.bodyRead += n } }
    var bodyRead: Int { state.withLock { $0.bodyRead } }
    func openGate() { state.withLock { $0.gateOpen = true } }
    var gateOpen: Bool { state.withLock { $0.gateOpen } }
    func completed(_ exchange: Exchange) { state.withLock { $0.exchanges.append(exchange) } }
    var exchanges: [Exchange] { state.withLock { $0.exchanges } }

    /// Waits (polling, cancellable) until the gate opens.
    func waitForGate() async throws {
        while !gateOpen { try await Task.sleep(for: .milliseconds(5)) }
    }
}

/// A few routes, each a behaviour a test needs.
struct Routes: HTTPHandler {
    let probe: Probe

    func screen(_ head: RequestHead) -> HTTPResponse? {
        head.path == "/refuse" ? HTTPResponse(status: 403, body: Array("refused".utf8)) : nil
    }

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let path = String(request.head.path)
        probe.start(path)
        defer { probe.finish(path) }
        let query = Self.query(request.head)
        switch path {
        case "/hello":
            return HTTPResponse(status: 200, headers: [("X-Target", request.head.target)], body: Array("hello".utf8))
        case "/echo":
            do {
                return HTTPResponse(status: 200, body: try await request.body.collect(upTo: 1 << 30))
            } catch {
                return HTTPResponse(status: 500, body: Array("\(error)".utf8))
            }
        case "/count", "/gated-count":
            // Reads chunk by chunk, checking the pattern; the gated form stops after the
            // first chunk until the test opens the gate.
            var count = 0
            var intact = true
            var chunks = 0
            do {
                for try await chunk in request.body {
                    if intact { intact = isPattern(chunk, from: count) }
                    count += chunk.count
                    chunks += 1
                    probe.read(chunk.count)
                    if path == "/gated-count" && chunks == 1 { try await probe.waitForGate() }
                }
            } catch {
                return HTTPResponse(status: 500, body: Array("\(error)".utf8))
            }
            return HTTPResponse(status: 200, body: Array("\(count) \(intact)".utf8))
        case "/ignore-body":
            return HTTPResponse(status: 200, body: Array("ignored".utf8))
        case "/slow":
            let ms = Int(query["ms"] ?? "") ?? 300
            try? await Task.sleep(for: .milliseconds(ms))
            return HTTPResponse(status: 200, body: Array("slow".utf8))
        case "/hang":
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                probe.cancel(path)
            }
            return HTTPResponse(status: 503, body: Array("cancelled".utf8))
        case "/stubborn":
            // Ignores cancellation until the test opens the gate: outlives any drain
            // timeout however late the stopping task runs (a timed wait did not, on a
            // loaded machine, when the drain began after it had ended).
            while !probe.gateOpen {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) { c.resume() }
                }
            }
            if Task.isCancelled { probe.cancel(path) }
            return HTTPResponse(status: 200, body: Array("late".utf8))
        case "/file":
            // A region of the file at `path`, as FileStorage answers a GET: sent with sendfile.
            guard let offset = Int(query["offset"] ?? "0"), let length = Int(query["length"] ?? "") else {
                return HTTPResponse(status: 400, body: Array("no length".utf8))
            }
            // The region owns the descriptor from here, and closes it even when it refuses.
            let fd = open(query["path"] ?? "", O_RDONLY | O_CLOEXEC)
            guard fd >= 0, let region = try? ObjectFileRegion(descriptor: fd, offset: offset, length: length) else {
                return HTTPResponse(status: 404, body: Array("no file".utf8))
            }
            return HTTPResponse(status: 200, stream: ResponseStream(length: length, body: ObjectBody(region)))
        case "/stream":
            let size = Int(query["size"] ?? "") ?? (1 << 20)
            let mode = query["mode"] ?? "ok"
            return HTTPResponse(status: 200, stream: Self.stream(size: size, mode: mode, probe: probe))
        default:
            return HTTPResponse(status: 404, body: Array("no route".utf8))
        }
    }

    func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse {
        HTTPResponse(status: error.status, headers: error.headers, body: Array(error.error.message.utf8))
    }

    func completed(_ exchange: Exchange) { probe.completed(exchange) }

    static func query(_ head: RequestHead) -> [String: String] {
        var out: [String: String] = [:]
        for pair in (head.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
        }
        return out
    }

    /// `size` bytes of the pattern in blocks; `mode` `throw` fails after half, `short` ends
    /// after half, `long` yields one block more than announced.
    static func stream(size: Int, mode: String, probe: Probe) -> ResponseStream {
        let offset = LockedValueBox(0)
        return ResponseStream(length: size) {
            let (start, limit): (Int, Int) = offset.withLock { o in
                let limit = mode == "long" ? size + patternBlock.count : (mode == "ok" ? size : size / 2)
                let start = o
                o = min(limit, o + patternBlock.count)
                return (start, limit)
            }
            if start >= limit {
                if mode == "throw" { throw CancellationError() }
                return nil
            }
            let n = min(patternBlock.count, limit - start)
            probe.produce(n)
            return n == patternBlock.count ? patternBlock : Array(patternBlock.prefix(n))
        }
    }
}

/// An in-process server on a free port, with the test routes.
final class TestServer: Sendable {
    let server: HTTPServer
    let port: Int
    let probe: Probe

    init(_ configure: (inout ServerConfiguration) -> Void = { _ in }, probe: Probe = Probe()) throws {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 2)
        configure(&configuration)
        self.probe = probe
        server = HTTPServer(configuration: configuration, handler: Routes(probe: probe), logger: .disabled)
        port = try server.start()
    }

    func client(source: String? = nil, timeoutSeconds: Int = 30, receiveBuffer: Int32? = nil,
                sendBuffer: Int32? = nil) throws -> Wire {
        try Wire(port: port, source: source, timeoutSeconds: timeoutSeconds, receiveBuffer: receiveBuffer,
                 sendBuffer: sendBuffer)
    }

    /// A client with a small receive buffer (so that backpressure shows soon) that has
    /// asked for `size` streamed bytes and read the answer's head.
    func streamingClient(size: Int) throws -> (Wire, WireResponse) {
        let c = try client(receiveBuffer: 64 << 10)
        try c.send(Wire.requestBytes("GET", "/stream?size=\(size)"))
        return (c, try c.head())
    }

    /// Stops and waits for the drain; returns the connections still busy at the timeout.
    @discardableResult
    func stop(drainTimeoutSeconds: Double = 10) async -> Int {
        server.stop()
        return await server.stopped(drainTimeoutSeconds: drainTimeoutSeconds)
    }
}
