import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that answers every connection the same scripted way, to see
/// what URLSession does with answers no Plugboard server gives: a redirect, silence, a
/// connection closed without an answer, bytes that are not HTTP.
final class RawHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `heads` and `open` are only touched under `lock`; the socket
    // is closed once, by `stop`.
    enum Behaviour: Sendable {
        /// Reads the request head, writes these bytes, closes.
        case respond(String)
        /// Reads the request head and keeps the connection open without a word until `stop`.
        case silence
        /// Closes the connection as soon as the request head has arrived.
        case hangUp
    }

    let port: Int
    private let listener: Int32
    private let behaviour: Behaviour
    private let lock = NSLock()
    private var heads: [String] = []
    private var open: [Int32] = []

    init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw TestFailure("bind/listen failed: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The request heads received so far (request line and header fields).
    var requests: [String] { lock.withLock { heads } }

    /// Stops accepting and closes every connection.
    func stop() {
        let sockets = lock.withLock { () -> [Int32] in
            defer { open = [] }
            return open
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in sockets { close(fd) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let head = readHead(connection)
            lock.withLock { heads.append(head) }
            switch behaviour {
            case .respond(let text):
                let bytes = Array(text.utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(connection)
            case .silence:
                lock.withLock { open.append(connection) }
            case .hangUp:
                close(connection)
            }
        }
    }

    private func readHead(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // Up to the blank line, wherever a read ends: a body may come in the same read.
        while !bytes.contains(Array("\r\n\r\n".utf8)) && bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        let end = bytes.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
