import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that answers every connection the same scripted way, to see
/// what URLSession does with answers no Plugboard server gives: a redirect, silence, a
/// connection closed without an answer, bytes that are not HTTP.
final class RawHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `heads`, `open` and `stopping` are only touched under `lock`;
    // the listener is closed once, by `stop`, after the accept loop has ended.
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
    /// Every accepted connection not yet closed, the one whose head is being read included.
    private var open: Set<Int32> = []
    private var stopping = false
    private let acceptLoopEnded = DispatchSemaphore(value: 0)

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

    /// Stops accepting and closes every connection. The listener is closed only once the
    /// accept loop has ended: closed earlier, its number could go to another test's
    /// listening socket, whose connections the loop would then accept and hang up on.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        // Under the lock, which the loop also holds to close one: a number is shut down only
        // while it is still this server's. This ends a read of a head still arriving.
        lock.withLock {
            stopping = true
            for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        acceptLoopEnded.wait()
        close(listener)
        let left = lock.withLock { () -> Set<Int32> in
            defer { open = [] }
            return open
        }
        for fd in left { close(fd) }
    }

    private func acceptLoop() {
        defer { acceptLoopEnded.signal() }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let admitted = lock.withLock { () -> Bool in
                guard !stopping else { return false }
                open.insert(connection)
                return true
            }
            guard admitted else {
                close(connection)
                return
            }
            let head = readHead(connection)
            lock.withLock { heads.append(head) }
            switch behaviour {
            case .respond(let text):
                let bytes = Array(text.utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                closeConnection(connection)
            case .silence:
                break
            case .hangUp:
                closeConnection(connection)
            }
        }
    }

    private func closeConnection(_ fd: Int32) {
        lock.withLock {
            open.remove(fd)
            close(fd)
        }
    }

    private func readHead(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !bytes.ends(with: Array("\r\n\r\n".utf8)) && bytes.count < 65_536 {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
