import Dispatch
import Glibc
import PlugboardConcurrency
import PlugboardTestSupport
@testable import PlugboardHTTPClient

/// A loopback HTTP server that answers each request line with a scripted reply, counting
/// the connections it accepts: what tells a reused connection from a new one.
final class ScriptedHTTPServer: Sendable {
    /// The bytes to send back, and whether to close the connection after them.
    struct Reply: Sendable {
        var bytes: [UInt8]
        var close: Bool
        /// Sent in pieces of this many bytes, `pauseMicroseconds` apart (0: all at once),
        /// so that the client's reads split where the pieces do.
        var piece = 0
        var pauseMicroseconds: UInt32 = 0
        /// After the bytes, wait until the client closes the connection (a stalled body).
        var hold = false
    }

    let port: Int
    private let listener: Int32
    private let accepted = LockedValueBox(0)
    private let closedByClient = Occurrences()
    private let script: @Sendable (String) -> Reply
    /// Request heads read, each counted before its reply is scripted.
    let requests = Occurrences()
    /// Connections this server has closed (after the close, whoever ended it).
    let closedConnections = Occurrences()

    var acceptedConnections: Int { accepted.withLock { $0 } }
    /// Connections the client closed while a reply was being sent or held.
    var connectionsClosedByClient: Int { closedByClient.value }

    /// Waits (up to 30 s) until the client has closed `count` connections; whether it did.
    func waitForClientCloses(_ count: Int) async -> Bool {
        await closedByClient.wait(for: count)
    }

    init(script: @escaping @Sendable (String) -> Reply) throws {
        self.script = script
        guard let (listener, port) = LoopbackSocket.bound(listening: true) else { throw CannotListen(errno: errno) }
        self.listener = listener
        self.port = port
        // A serial queue each (overcommitting threads): connections blocked in recv never
        // hold back the next accept.
        DispatchQueue(label: "scripted-http-server").async { [self] in acceptLoop() }
    }

    /// Stops accepting: the port refuses from now on, and the server can be freed.
    func stop() {
        _ = shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            accepted.withLock { $0 += 1 }
            DispatchQueue(label: "scripted-http-connection").async { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        defer {
            close(connection)
            closedConnections.signal()
        }
        var pending: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            // Requests here have no body: the head is the request.
            while pending.count < 4 || !Self.hasBlankLine(pending) {
                let count = recv(connection, &scratch, scratch.count, 0)
                guard count > 0 else { return }
                pending += scratch[..<count]
            }
            let end = Self.blankLineEnd(pending)
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end)
            let requestLine = head.split(separator: "\r\n").first.map(String.init) ?? ""
            requests.signal()
            let reply = script(requestLine)
            guard Self.send(reply, on: connection) else {
                closedByClient.signal()
                return
            }
            if reply.hold {
                // Anything but more bytes ends the hold: the client's FIN or reset.
                while recv(connection, &scratch, scratch.count, 0) > 0 {}
                closedByClient.signal()
                return
            }
            if reply.close { return }
        }
    }

    /// Whether all of the reply went out (false: the client closed the connection).
    private static func send(_ reply: Reply, on connection: Int32) -> Bool {
        let piece = reply.piece > 0 ? reply.piece : max(reply.bytes.count, 1)
        var offset = 0
        while offset < reply.bytes.count {
            let end = min(offset + piece, reply.bytes.count)
            var sent = offset
            while sent < end {
                let count = reply.bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress! + sent, end - sent, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return false }
                sent += count
            }
            offset = end
            if reply.pauseMicroseconds > 0, offset < reply.bytes.count { usleep(reply.pauseMicroseconds) }
        }
        return true
    }

    struct CannotListen: Error {
        var errno: Int32
    }

    private static func hasBlankLine(_ bytes: [UInt8]) -> Bool {
        blankLineEnd(bytes) > 0
    }

    private static func blankLineEnd(_ bytes: [UInt8]) -> Int {
        let marker: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return 0 }
        for index in 0...(bytes.count - 4) where Array(bytes[index..<(index + 4)]) == marker {
            return index + 4
        }
        return 0
    }
}

/// A loopback port whose accept queue is full (backlog 0, one connection waiting, never
/// accepted): the kernel drops further SYNs, so a connect there hangs until it times out.
final class FullListener {
    let port: Int
    private let listener: Int32
    private let waiting: PlainHTTPSocket

    init() throws {
        guard let (listener, port) = LoopbackSocket.bound(listening: true, backlog: 0) else {
            throw ScriptedHTTPServer.CannotListen(errno: errno)
        }
        self.listener = listener
        self.port = port
        waiting = try PlainHTTPSocket.connect(host: "127.0.0.1", port: port, timeoutSeconds: 5)
    }

    deinit {
        close(listener)
    }

    /// Waits (up to 30 s) until a socket of this machine is in SYN-SENT towards this
    /// listener: a connect the kernel holds because the queue is full. Nothing signals
    /// that, so the kernel's table is read every 20 ms.
    func waitForAConnectInProgress() async -> Bool {
        let hex = String(port, radix: 16, uppercase: true)
        let wanted = ":" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        for _ in 0..<1500 {
            let table = Self.read("/proc/net/tcp")
            // Columns: sl, local_address, rem_address, st (02 is SYN-SENT), ...
            let inProgress = table.split(separator: "\n").dropFirst().contains { line in
                let columns = line.split(separator: " ")
                return columns.count > 3 && columns[2].hasSuffix(wanted) && columns[3] == "02"
            }
            if inProgress { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The whole of a small file, or "" when it cannot be read.
    private static func read(_ path: String) -> String {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return "" }
        defer { close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = Glibc.read(file, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
