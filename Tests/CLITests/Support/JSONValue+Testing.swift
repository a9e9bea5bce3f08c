import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// Reading `--json` output in tests, with the host's own strict parser: the output must
/// be one RFC 8259 document with no duplicate keys, and members keep their order.
extension JSONValue {
    /// Parses `text`, or throws the parser's located error.
    static func parse(_ text: String) throws -> JSONValue {
        try JSONParser.parse(Array(text.utf8), source: "stdout")
    }

    /// The member names of an object, in order; nil for anything else.
    var keys: [String]? {
        if case .object(let members) = kind { return members.map(\.key) }
        return nil
    }

    var elements: [JSONValue]? {
        if case .array(let items) = kind { return items }
        return nil
    }

    var string: String? {
        if case .string(let s) = kind { return s }
        return nil
    }

    var integer: Int64? {
        if case .integer(let i) = kind { return i }
        return nil
    }

    var bool: Bool? {
        if case .bool(let b) = kind { return b }
        return nil
    }

    var isNull: Bool {
        if case .null = kind { return true }
        return false
    }

    /// The strings of an array of strings.
    var strings: [String]? { elements?.compactMap(\.string) }
}

extension CommandResult {
    /// Standard output as JSON.
    func json() throws -> JSONValue { try JSONValue.parse(stdout) }
}
