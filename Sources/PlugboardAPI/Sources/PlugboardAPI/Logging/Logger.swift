/// A leveled logger in the shape of swift-log's: a small value with a label, a minimum
/// level and metadata, writing through a ``LogHandler`` that the host installs.
///
/// Plugins never build their own handler: the registrar hands each plugin a logger that
/// already carries `plugin=<name>`, so every line names its source and goes wherever the
/// host sends its own.
///
/// ```swift
/// registrar.logger.info("connected", metadata: ["bucket": .string(bucket)])
/// ```
///
/// - Important: Never put a secret in a message or in metadata. Loggers do not redact.
public struct Logger: Sendable {
    /// What the lines are about, such as `plugboard.loader`.
    public var label: String
    /// Lines below this level are dropped before their message is built.
    public var logLevel: Level
    /// Metadata added to every line.
    public var metadata: Metadata
    /// Where lines go.
    public var handler: any LogHandler

    public init(label: String, logLevel: Level = .info, metadata: Metadata = [:],
                handler: any LogHandler = StreamLogHandler.standardError) {
        self.label = label
        self.logLevel = logLevel
        self.metadata = metadata
        self.handler = handler
    }

    /// A logger that drops everything.
    public static var disabled: Logger {
        Logger(label: "disabled", logLevel: .critical, handler: NoOpLogHandler())
    }

    /// Logs `message` at `level`; the message is only built when the level is enabled.
    public func log(_ level: Level, _ message: @autoclosure () -> String,
                    metadata: @autoclosure () -> Metadata = [:]) {
        guard level >= logLevel else { return }
        var merged = self.metadata
        for (k, v) in metadata() { merged[k] = v }
        handler.log(level: level, label: label, message: message(), metadata: merged)
    }

    public func trace(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.trace, message(), metadata: metadata())
    }
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.debug, message(), metadata: metadata())
    }
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.info, message(), metadata: metadata())
    }
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.notice, message(), metadata: metadata())
    }
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.warning, message(), metadata: metadata())
    }
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.error, message(), metadata: metadata())
    }
    public func critical(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.critical, message(), metadata: metadata())
    }

    /// A copy of this logger with one more metadata entry.
    public func with(_ key: String, _ value: MetadataValue) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }
}

extension Logger {
    /// Severity, from `trace` (most verbose) to `critical`.
    public enum Level: String, Sendable, CaseIterable, Comparable, Codable {
        case trace, debug, info, notice, warning, error, critical

        // A switch, not `allCases.firstIndex`: every log call compares levels, and
        // `allCases` builds an array each time.
        private var ordinal: Int {
            switch self {
            case .trace: return 0
            case .debug: return 1
            case .info: return 2
            case .notice: return 3
            case .warning: return 4
            case .error: return 5
            case .critical: return 6
            }
        }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.ordinal < rhs.ordinal }
    }

    /// Structured data attached to a line.
    public typealias Metadata = [String: MetadataValue]

    /// One metadata value; literals convert, so `["bucket": "photos"]` works.
    public enum MetadataValue: Sendable, Equatable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
        ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
        case string(String)
        case array([MetadataValue])
        case dictionary([String: MetadataValue])

        public init(stringLiteral value: String) { self = .string(value) }
        public init(arrayLiteral elements: MetadataValue...) { self = .array(elements) }
        public init(dictionaryLiteral elements: (String, MetadataValue)...) {
            self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
        }

        public var description: String {
            switch self {
            case .string(let s): return s
            case .array(let a): return "[" + a.map(\.description).joined(separator: ", ") + "]"
            case .dictionary(let d):
                return "[" + d.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
                    .joined(separator: ", ") + "]"
            }
        }
    }
}
