import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `plugboard serve` started by a test: the package's own executable, on a free
/// loopback port, with its standard error kept in a file for failure messages.
final class ServeProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is only started, signalled and waited for.
    private let process: Process
    /// `http://127.0.0.1:PORT`, from the first line the server prints.
    let baseURL: String
    let errorLog: String

    /// How long a debug build on a loaded machine may take to load its plugins and listen.
    static let startTimeoutMilliseconds: Int32 = 60_000

    /// Starts `plugboard serve --listen 127.0.0.1:0` on `manifest` and waits for its
    /// `listening on` line.
    init(manifest: String, sandbox: TestSandbox, environment: [String: String] = [:]) throws {
        let output = Pipe()
        errorLog = sandbox.path("serve-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: TestSandbox.productsFolder + "/plugboard")
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--manifest", manifest,
                             "--cache-dir", sandbox.path("serve-cache"), "--log-level", "warning"]
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PLUGBOARD_") && $0.key != "XDG_CACHE_HOME" }
        env["HOME"] = sandbox.root
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (name, value) in environment { env[name] = value }
        process.environment = env
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: errorLog)
        process.standardInput = FileHandle.nullDevice
        try process.run()

        let line = Self.firstLine(output.fileHandleForReading.fileDescriptor, timeoutMilliseconds: Self.startTimeoutMilliseconds)
        let announced = "plugboard serve: listening on "
        guard let line, line.hasPrefix(announced) else {
            Self.end(process)
            let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
            throw TestFailure("plugboard serve did not announce its address; first line \(line.map { "\"\($0)\"" } ?? "none"), standard error:\n\(log)")
        }
        baseURL = String(line.dropFirst(announced.count))
    }

    deinit {
        Self.end(process)
    }

    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        Self.end(process)
        return process.terminationStatus
    }

    private static func end(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Reads up to the first newline, waiting at most `timeoutMilliseconds` in all.
    private static func firstLine(_ fd: Int32, timeoutMilliseconds: Int32) -> String? {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
        var byte: UInt8 = 0
        while Date() < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno != EINTR { return nil }
            if ready <= 0 { continue }
            let count = read(fd, &byte, 1)
            if count <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}
