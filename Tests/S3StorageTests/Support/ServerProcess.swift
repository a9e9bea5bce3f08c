import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport

/// A server program the tests start on a loopback port and stop when the test process
/// ends (moto_server, the misbehaving S3 stub).
final class ServerProcess: @unchecked Sendable {
    /// Every started server's process id, for the exit handler (a C function captures nothing).
    nonisolated(unsafe) static var children: [pid_t] = []
    private static let lock = NSLock()

    let port: Int
    private let process: Process

    /// Starts `program` with `arguments` under Python/with_parent.py (which ends it when
    /// this process ends, however it ends) and waits until something listens on `port`.
    init(_ program: String, _ arguments: [String], port: Int, environment: [String: String] = [:]) throws {
        self.port = port
        process = Process()
        // A test runner started by systemd must not have its servers speak to systemd.
        process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "NOTIFY_SOCKET" }.merging(environment) { $1 }
        process.executableURL = URL(fileURLWithPath: try MotoServer.python())
        process.arguments = ["\(MotoServer.packageRoot)/Tests/S3StorageTests/Python/with_parent.py", program] + arguments
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("s3-tests-server-\(port).log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw TestFailure("cannot create \(log.path)")
        }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        Self.lock.withLock {
            if Self.children.isEmpty {
                atexit { for pid in ServerProcess.children { kill(pid, SIGTERM) } }
            }
            Self.children.append(process.processIdentifier)
        }
        for _ in 0..<300 {
            if !process.isRunning {
                let text = (try? String(contentsOfFile: log.path, encoding: .utf8)) ?? ""
                throw TestFailure("\(program) exited with \(process.terminationStatus): \(text.suffix(2000))")
            }
            if Self.canConnect(port: port) { return }
            usleep(50_000)
        }
        throw TestFailure("\(program) did not listen on 127.0.0.1:\(port) within 15 seconds")
    }

    /// A port that was free a moment ago.
    static func freePort() throws -> Int {
        guard let port = LoopbackSocket.freePort() else { throw TestFailure("could not bind a loopback port") }
        return port
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
