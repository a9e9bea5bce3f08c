#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency
import PlugboardTestSupport

/// A loopback server that plays one etcd member badly, as a real one cannot be made to on
/// cue: it reads each request whole, then closes without an answer (a member that died
/// with the request in hand) or answers the gateway error it was given.
final class FakeEtcdMember: Sendable {
    enum Behaviour: Sendable {
        case closeAfterRequest
        /// The gateway's unary error answer: HTTP 503 and gRPC UNAVAILABLE, with `message`.
        case unavailable(String)
    }

    let port: Int
    private let listener: Int32
    private let requests = LockedValueBox(0)

    init(_ behaviour: Behaviour) throws {
        guard let (fd, port) = LoopbackSocket.bound(listening: true) else { throw FakeMemberError() }
        listener = fd
        self.port = port
        let requests = self.requests
        _ = Threads.spawn {
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                _ = Threads.spawn {
                    defer { close(connection) }
                    while Self.readRequest(connection) {
                        requests.withLock { $0 += 1 }
                        guard case .unavailable(let message) = behaviour else { return }
                        let body = #"{"error":"\#(message)","message":"\#(message)","code":14}"#
                        let answer = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
                        guard answer.withUnsafeBytes({ send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == answer.count else { return }
                    }
                }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// How many requests came in whole.
    var requestCount: Int { requests.withLock { $0 } }

    /// Reads one request's head and its Content-Length body; false at the end of the stream.
    private static func readRequest(_ connection: Int32) -> Bool {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = headEnd(bytes) {
                let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingPrefix(" ")) } ?? 0
                if bytes.count >= end + 4 + length { return true }
            }
            let count = recv(connection, &buffer, buffer.count, 0)
            if count <= 0 { return false }
            bytes += buffer[..<count]
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}

struct FakeMemberError: Error {}
