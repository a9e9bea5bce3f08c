import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that answers every connection the same scripted way, to see
/// what URLSession does with answers no Plugboard server gives: a redirect, silence, a
/// connection closed without an answer, bytes that are not HTTP.
final class RawHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `heads`, `open` and `stopped` are only touched under `lock`;
    // the listening socket is closed once, by the accept thread as it ends.
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
    private var stopped = false

    init(_ behaviour: Behaviour) throws {
        self.behaviour = behaviour
        // Close-on-exec, here and for each connection: a `plugboard serve` another test
        // spawns meanwhile would otherwise hold them open after `stop`.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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

    /// The request heads once there are at least `count`, or those there are after 60
    /// seconds: for a client that gives up without waiting for this server (a timeout), so
    /// that this server's thread, late on a busy machine, may still record the last one.
    func requests(atLeast count: Int) async -> [String] {
        let start = ContinuousClock.now
        while requests.count < count && ContinuousClock.now - start < .seconds(60) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return requests
    }

    /// Stops accepting (new connections are refused at once) and closes every connection.
    ///
    /// The listening socket is only shut down here; the accept thread closes it when its
    /// `accept` fails. Were it closed here, its number could go to another test's new
    /// socket before the thread's next `accept`, which would then take that socket's
    /// connections and answer them with this server's script.
    func stop() {
        let sockets = lock.withLock { () -> [Int32] in
            stopped = true
            defer { open = [] }
            return open
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in sockets { close(fd) }
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR && !lock.withLock({ stopped }) { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let head = readHead(connection)
            lock.withLock { heads.append(head) }
            switch behaviour {
            case .respond(let text):
                let bytes = Array(text.utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(connection)
            case .silence:
                let kept = lock.withLock { () -> Bool in
                    if !stopped { open.append(connection) }
                    return !stopped
                }
                if !kept { close(connection) }
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
