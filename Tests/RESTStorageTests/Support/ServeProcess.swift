import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport

/// A real `plugboard serve` started by a test: the package's own executable, on a free
/// loopback port, with its standard error kept in a file for failure messages.
///
/// Spawned as a service manager starts a daemon (``ChildProcess``): an empty signal mask
/// and default signal actions.
final class ServeProcess: @unchecked Sendable {
    // @unchecked Sendable: `exitStatus` is only read and written under `lock`.
    let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?
    /// `http://127.0.0.1:PORT`, from the first line the server prints.
    let baseURL: String
    let errorLog: String

    /// How long a debug build on a loaded machine may take to load its plugins and listen.
    static let startTimeout: TimeInterval = 60
    /// How long shutdown may take: the server's own bound is 10 seconds.
    static let stopTimeout: TimeInterval = 30

    /// Starts `plugboard serve --listen 127.0.0.1:0` on `manifest` and waits for its
    /// `listening on` line.
    init(manifest: String, sandbox: TestSandbox, environment: [String: String] = [:], arguments extra: [String] = []) throws {
        errorLog = sandbox.path("serve-\(UUID().uuidString.prefix(8)).log")
        // NOTIFY_SOCKET: a test runner started by systemd must not have its servers speak to systemd.
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PLUGBOARD_") && $0.key != "XDG_CACHE_HOME" && $0.key != "NOTIFY_SOCKET" }
        env["HOME"] = sandbox.root
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (name, value) in environment { env[name] = value }
        let arguments = ["serve", "--listen", "127.0.0.1:0", "--manifest", manifest,
                         "--cache-dir", sandbox.path("serve-cache"), "--log-level", "info"] + extra
        var output: [Int32] = [-1, -1]
        guard pipe(&output) == 0 else { throw TestFailure("pipe failed: \(String(cString: strerror(errno)))") }
        // Only the child's descriptor 1 (dup2 clears the flag) may reach the child, or
        // another child spawned meanwhile would hold the pipe open.
        for fd in output { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(output[0]) }
        do {
            defer { close(output[1]) }
            pid = try Self.spawn(TestSandbox.productsFolder + "/plugboard", arguments, environment: env,
                                 stdout: output[1], stderrPath: errorLog)
        }
        let line = ChildOutput.firstLine(output[0], timeoutMilliseconds: Int64(Self.startTimeout * 1000))
        let announced = "plugboard serve: listening on "
        guard let line, line.hasPrefix(announced) else {
            kill(pid, SIGKILL)
            _ = Self.waitForExit(pid, timeout: Self.stopTimeout)
            let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
            throw TestFailure("plugboard serve did not announce its address; first line \(line.map { "\"\($0)\"" } ?? "none"), standard error:\n\(log)")
        }
        baseURL = String(line.dropFirst(announced.count))
    }

    deinit {
        if lock.withLock({ exitStatus == nil }) {
            kill(pid, SIGKILL)
            _ = waitForExit(timeout: Self.stopTimeout)
        }
    }

    /// SIGTERM, then waits for the exit; returns the exit status, 128 + the signal that
    /// ended it, or -1 when it had to be killed after ``stopTimeout``.
    @discardableResult
    func stop() -> Int32 {
        if let status = lock.withLock({ exitStatus }) { return status }
        kill(pid, SIGTERM)
        if let status = waitForExit(timeout: Self.stopTimeout) { return status }
        kill(pid, SIGKILL)
        _ = waitForExit(timeout: Self.stopTimeout)
        return -1
    }

    /// The server's standard error so far.
    var log: String { (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "" }

    private func waitForExit(timeout: TimeInterval) -> Int32? {
        guard let code = Self.waitForExit(pid, timeout: timeout) else { return nil }
        lock.withLock { exitStatus = code }
        return code
    }

    /// Reaps `pid`; its exit status or 128 + its signal, or nil when it is still running
    /// after `timeout`.
    private static func waitForExit(_ pid: pid_t, timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            }
            if reaped < 0 && errno != EINTR { return nil }
            if Date() >= deadline { return nil }
            usleep(10_000)
        }
    }

    private static func spawn(_ program: String, _ arguments: [String], environment: [String: String],
                              stdout: Int32, stderrPath: String) throws -> pid_t {
        do throws(ChildProcessError) {
            return try ChildProcess.spawn(program, arguments, environment: environment, stdout: .descriptor(stdout),
                                          stderr: .file(stderrPath, append: false))
        } catch {
            throw TestFailure(error.description)
        }
    }
}
