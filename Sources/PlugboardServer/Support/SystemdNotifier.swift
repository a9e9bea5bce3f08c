#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardAPI

/// Tells systemd how `plugboard serve` is doing, by the `NOTIFY_SOCKET` protocol
/// (sd_notify(3)), so that a unit of `Type=notify` or `Type=notify-reload` knows when the
/// server is ready, reloading and stopping instead of guessing from the process.
public struct SystemdNotifier: Sendable {
    private let socket: String
    private let logger: Logger

    /// The notifier for `NOTIFY_SOCKET` (`/path` or `@abstract`), or nil when it is unset
    /// or empty (not run by systemd).
    public init?(socket: String?, logger: Logger) {
        guard let socket, !socket.isEmpty else { return nil }
        self.socket = socket
        self.logger = logger.with("component", "systemd")
    }

    /// `READY=1`: the listener is bound and the plugins are started (again, after a reload).
    public func ready(status: String) { send(["READY=1", "STATUS=\(status)"]) }

    /// `RELOADING=1` with the monotonic time, which `Type=notify-reload` needs to tell this
    /// reload from an earlier one; `READY=1` must follow when it ends, however it ends.
    public func reloading(status: String) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)", "STATUS=\(status)"])
    }

    /// `STOPPING=1`: the graceful stop has begun.
    public func stopping() { send(["STOPPING=1", "STATUS=stopping"]) }

    private func send(_ assignments: [String]) {
        // A newline inside STATUS would start another assignment.
        let message = assignments.map { String($0.map { $0 == "\n" ? " " : $0 }) }.joined(separator: "\n")
        let bytes = Array(message.utf8)
        let sent = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                plugboard_notify(socket, $0, bytes.count)
            }
        }
        // systemd going away mid-run is not the server's failure: say so and serve on.
        if sent != 0 {
            logger.warning("could not notify systemd: \(String(cString: strerror(errno)))",
                           metadata: ["socket": .string(socket), "message": .string(assignments[0])])
        }
    }
}
