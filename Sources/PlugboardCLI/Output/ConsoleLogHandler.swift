import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `--log-format`: text for people, JSON for log shippers (journald, Loki, Vector...).
enum LogFormat: String, CaseIterable, Sendable {
    case text, json
}

/// The CLI's log lines on standard error, each written whole with one `write` loop so
/// that concurrent lines never interleave, and each stamped with the time: a line that
/// reaches a file or a pipe has no other clock.
///
/// Secrets are scrubbed before a line gets here (the host wraps this handler in its
/// scrubbing one), so both formats print what the scrubber left.
struct ConsoleLogHandler: LogHandler {
    let format: LogFormat
    let fileDescriptor: Int32

    init(format: LogFormat, fileDescriptor: Int32 = 2) {
        self.format = format
        self.fileDescriptor = fileDescriptor
    }

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        Output.write(line(time: Timestamp.now(), level: level, label: label, message: message, metadata: metadata),
                     to: fileDescriptor)
    }

    /// One line, ending in a newline.
    func line(time: Timestamp, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        let sorted = metadata.sorted { $0.key < $1.key }
        switch format {
        case .text:
            var line = "\(time.iso8601) \(level.rawValue.uppercased()) \(label): \(message)"
            for (k, v) in sorted { line += " \(k)=\(v)" }
            return line + "\n"
        case .json:
            // Keys in a fixed order, metadata sorted: lines diff well and read alike.
            let object = JSONOutput.object([
                ("time", .string(time.iso8601)), ("level", .string(level.rawValue)), ("label", .string(label)),
                ("message", .string(message)), ("metadata", .object(sorted.map { ($0.key, Self.json($0.value)) })),
            ])
            return object.render(pretty: false) + "\n"
        }
    }

    /// Metadata keeps its shape in JSON: arrays and dictionaries stay structured.
    private static func json(_ value: Logger.MetadataValue) -> JSONOutput {
        switch value {
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(json))
        case .dictionary(let d): return .object(d.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        @unknown default: return .string(value.description)
        }
    }
}
