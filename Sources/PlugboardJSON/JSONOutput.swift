import PlugboardAPI

/// JSON the CLI prints and the HTTP API answers with: objects keep their keys in the order given, so output is stable
/// and reads in a sensible order; `null` is written, never omitted.
public indirect enum JSONOutput: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONOutput])
    case object([(String, JSONOutput)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }

    public static func string(_ s: String?) -> JSONOutput { s.map { .string($0) } ?? .null }

    /// `{"error": {"code", "message", "detail", "hint"}}`: the one error shape of the CLI
    /// and the HTTP API.
    public static func error(_ e: PlugboardError) -> JSONOutput {
        .object([("error", errorBody(e))])
    }

    public static func errorBody(_ e: PlugboardError?) -> JSONOutput {
        guard let e else { return .null }
        return .object([("code", .string(e.code.rawValue)), ("message", .string(e.message)),
                        ("detail", .string(e.detail)), ("hint", .string(e.hint))])
    }

    /// A config value as JSON.
    public static func config(_ v: ConfigValue) -> JSONOutput {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .integer(let i): return .int(i)
        case .number(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(config))
        case .object(let o): return .object(o.sorted { $0.key < $1.key }.map { ($0.key, config($0.value)) })
        }
    }

    /// Compact (`pretty == false`) or indented text.
    public func render(pretty: Bool = true, indent: String = "") -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .string(let s): return Self.quote(s)
        case .array(let items):
            if items.isEmpty { return "[]" }
            if !pretty { return "[" + items.map { $0.render(pretty: false) }.joined(separator: ",") + "]" }
            let inner = indent + "  "
            return "[\n" + items.map { inner + $0.render(pretty: true, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            if !pretty {
                return "{" + members.map { "\(Self.quote($0.0)):\($0.1.render(pretty: false))" }.joined(separator: ",") + "}"
            }
            let inner = indent + "  "
            return "{\n" + members.map { "\(inner)\(Self.quote($0.0)): \($0.1.render(pretty: true, indent: inner))" }
                .joined(separator: ",\n") + "\n\(indent)}"
        }
    }

    /// A JSON string literal; `ConfigValue` (JSON itself) knows how to write one.
    public static func quote(_ s: String) -> String {
        ConfigValue.string(s).description
    }
}
