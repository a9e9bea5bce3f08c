import Foundation
import PlugboardAPI

/// Keeps every log line (message and metadata) so that tests can read what was logged.
final class CapturedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []

    var lines: [String] { lock.withLock { stored } }

    func append(_ line: String) { lock.withLock { stored.append(line) } }

    /// A logger at trace level writing here.
    var logger: Logger {
        Logger(label: "s3-tests", logLevel: .trace, handler: CapturingLogHandler(lines: self))
    }
}

struct CapturingLogHandler: LogHandler {
    let lines: CapturedLines

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.append("\(level) \(label): \(message) \(fields)")
    }
}
