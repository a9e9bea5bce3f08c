#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange with a server on 127.0.0.1, for a test harness to ask a server
/// it started whether it is up (etcd's `/health`, its status): `Connection: close`, the
/// answer read to its end, on a thread of its own, each wait bounded.
public enum LoopbackHTTP {
    /// The body of `GET path`, or nil when nothing answered 2xx.
    public static func get(port: Int, path: String, timeoutSeconds: Int = 2) async -> String? {
        await exchange(port: port, request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n",
                       timeoutSeconds: timeoutSeconds)
    }

    /// The body of `POST path` with a JSON `body`, or nil when nothing answered 2xx.
    public static func post(port: Int, path: String, body: String, timeoutSeconds: Int = 2) async -> String? {
        await exchange(port: port, request: "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                       + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)", timeoutSeconds: timeoutSeconds)
    }

    /// The text of a JSON member `"name":"value"` or `"name":value` (etcd writes its
    /// int64 fields as strings), without a JSON parser: enough for a harness.
    public static func field(_ name: String, in body: String) -> String? {
        guard let range = body.firstRange(of: "\"\(name)\":") else { return nil }
        let rest = body[range.upperBound...].drop { $0 == "\"" || $0 == " " }
        let value = rest.prefix { $0.isNumber || $0.isLetter || $0 == "-" }
        return value.isEmpty ? nil : String(value)
    }

    private static func exchange(port: Int, request: String, timeoutSeconds: Int) async -> String? {
        await OwnThread.run { () -> String? in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else { return nil }
            let bytes = Array(request.utf8)
            guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return nil }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while answer.count < 1 << 20 {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { break }
                answer += buffer[..<count]
            }
            let text = String(decoding: answer, as: UTF8.self)
            guard text.hasPrefix("HTTP/1.1 2") || text.hasPrefix("HTTP/1.0 2"), let end = text.firstRange(of: "\r\n\r\n") else { return nil }
            return String(text[end.upperBound...])
        }
    }
}
