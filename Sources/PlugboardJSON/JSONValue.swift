import PlugboardAPI

/// A parsed JSON value that remembers where it was written: its line and column in the
/// source, and its path from the document's root.
///
/// Objects keep their members in document order, and ``JSONParser`` refuses duplicate
/// keys, so converting to ``ConfigValue`` (``configValue``) never loses a member.
///
/// ```swift
/// let root = try JSONParser.parse(Array(text.utf8), source: "plugins.json")
/// if let rank = root["plugins"]?[0]?["rank"] { print(rank.location, rank.path) }
/// ```
public struct JSONValue: Sendable, CustomStringConvertible {
    /// What the value is.
    public enum Kind: Sendable {
        /// `null`.
        case null
        /// `true` or `false`.
        case bool(Bool)
        /// A number written without fraction or exponent that fits in an `Int64`.
        case integer(Int64)
        /// Any other number.
        case number(Double)
        /// A string, escapes decoded.
        case string(String)
        /// The elements in order.
        case array([JSONValue])
        /// The members in document order; keys are unique.
        case object([Member])
    }

    /// One member of an object.
    public struct Member: Sendable {
        /// The key.
        public let key: String
        /// Where the key's opening quote is.
        public let keyLocation: SourceLocation
        /// The member's value.
        public let value: JSONValue

        /// Creates a member.
        public init(key: String, keyLocation: SourceLocation, value: JSONValue) {
            self.key = key
            self.keyLocation = keyLocation
            self.value = value
        }
    }

    /// The value itself.
    public let kind: Kind
    /// Where the value's first character is.
    public let location: SourceLocation
    /// Where the value is in the document.
    public let path: JSONPath

    /// Creates a value.
    public init(_ kind: Kind, location: SourceLocation, path: JSONPath) {
        self.kind = kind
        self.location = location
        self.path = path
    }

    /// The member of an object named `key`, or nil (also for non-objects).
    public subscript(key: String) -> JSONValue? { member(named: key)?.value }

    /// The element of an array at `index`, or nil (also for non-arrays).
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = kind, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The member of an object named `key`, with its key's location, or nil.
    public func member(named key: String) -> Member? {
        guard case .object(let members) = kind else { return nil }
        return members.first { $0.key == key }
    }

    /// The value without locations.
    public var configValue: ConfigValue {
        switch kind {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .integer(let i): return .integer(i)
        case .number(let d): return .number(d)
        case .string(let s): return .string(s)
        case .array(let a): return .array(a.map(\.configValue))
        case .object(let members):
            var out: [String: ConfigValue] = [:]
            for m in members { out[m.key] = m.value.configValue }
            return .object(out)
        }
    }

    /// The kind with its article, for messages: `a string`, `an integer`, `null`, ...
    public var kindDescription: String {
        switch kind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer: return "an integer"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// Compact JSON text, keys sorted (the text of ``configValue``).
    ///
    /// - Important: this prints every string as it is, secrets included. To show a
    ///   plugin's configuration, use PlugboardHost's `ManifestPlugin.redactedConfig`.
    public var description: String { configValue.description }
}
