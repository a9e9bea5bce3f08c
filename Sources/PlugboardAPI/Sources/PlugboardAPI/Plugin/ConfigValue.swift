/// A JSON value from a plugin's `config` in the manifest.
///
/// An enum because JSON's six kinds are fixed; integers are kept apart from other numbers
/// so that `"port": 9000` never passes through a `Double`.
@frozen
public enum ConfigValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([ConfigValue])
    case object([String: ConfigValue])

    /// The JSON kind, for messages: `string`, `integer`, `object`, ...
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .integer: return "integer"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Compact JSON text.
    public var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let d): return String(d)
        case .string(let s): return Self.quote(s)
        case .array(let a): return "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o):
            return "{" + o.sorted { $0.key < $1.key }.map { "\(Self.quote($0.key)):\($0.value)" }
                .joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20: out += unicodeEscape(u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    private static func unicodeEscape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }
}
