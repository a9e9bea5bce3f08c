#if canImport(Glibc)
import Glibc
#endif

/// A response as read off the wire.
struct RawResponse {
    var status: Int
    /// Names lower-cased, in order.
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    func all(_ name: String) -> [String] { headers.filter { $0.0 == name }.map(\.1) }
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The `error.code` of an error body (a plain search: the shape is checked elsewhere).
    var errorCode: String? {
        guard let r = text.firstRange(of: "{\"error\":{\"code\":\"") else { return nil }
        return String(text[r.upperBound...].prefix { $0 != "\"" })
    }
}

/// A plain TCP client: sends exactly the bytes given and parses responses itself, so
/// tests can send what no HTTP library would.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 15) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket failed") }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            throw FixtureError("connect to port \(port) failed: \(String(cString: strerror(errno)))")
        }
    }

    /// The one close of `fd`: a class whose initializer throws once every property is set
    /// is deinitialized, so the initializer's failure paths must not close it too (the
    /// second close would hit whatever descriptor another test's thread got the number for).
    deinit { if fd >= 0 { close(fd) } }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw FixtureError("send failed: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// One request with `Host` and `Content-Length` filled in.
    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
        for (k, v) in headers { text += "\(k): \(v)\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        try send(Array((text + "\r\n").utf8) + (body ?? []))
        return try response(head: method == "HEAD")
    }

    /// Reads one response (the body by its Content-Length; none for HEAD, 204, 1xx).
    func response(head: Bool = false) throws -> RawResponse {
        while true {
            let end = try headEnd()
            let lines = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
            buffer.removeFirst(end + 4)
            guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
                  let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
                throw FixtureError("bad status line: \(lines.first ?? "")")
            }
            var headers: [(String, String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { throw FixtureError("bad header line \(line)") }
                headers.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...].drop { $0 == " " })))
            }
            if status == 100 { continue }
            var response = RawResponse(status: status, headers: headers, body: [])
            if head || status == 204 { return response }
            guard let length = response.header("content-length").flatMap({ Int($0) }) else {
                throw FixtureError("response without Content-Length")
            }
            while buffer.count < length { guard try fill() else { throw FixtureError("closed inside a body") } }
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
            return response
        }
    }

    /// Whether the server closed the connection (reads to the end, at most the timeout).
    func isClosedByServer() -> Bool {
        while true {
            do {
                if try !fill() { return true }
            } catch {
                return errno == ECONNRESET
            }
        }
    }

    private func headEnd() throws -> Int {
        var from = 0
        while true {
            if buffer.count >= 4 {
                for i in from...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    return i
                }
                from = buffer.count - 3
            }
            guard try fill() else { throw FixtureError("connection closed before a response head") }
        }
    }

    /// Reads more; false at the end of the stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == ECONNRESET { return false }
            throw FixtureError("recv failed: \(String(cString: strerror(errno)))")
        }
        if n == 0 { return false }
        buffer += chunk[0..<n]
        return true
    }
}

/// Each byte of `key`'s UTF-8 percent-encoded except unreserved ones, as RESTStorage does.
func encodeKey(_ key: String) -> String {
    var out = ""
    for b in key.utf8 {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.append(Character(Unicode.Scalar(b)))
        default:
            let hex = Array("0123456789ABCDEF".utf8)
            out += "%" + String(decoding: [hex[Int(b >> 4)], hex[Int(b & 15)]], as: UTF8.self)
        }
    }
    return out
}
