import PlugboardAPI
import PlugboardJSON

/// Reads typed values out of the manifest's JSON tree, raising errors that say where:
/// `plugins.json:3:15: plugins[0].rank: expected an integer, found a string`.
struct ManifestReader {
    /// The manifest's path as given, the start of every message.
    let source: String

    /// `source:line:column`.
    func at(_ location: SourceLocation) -> String { "\(source):\(location)" }

    /// A short, escaped rendering of a name or value for messages, in double quotes.
    static func quoted(_ text: String) -> String {
        let shown = text.count <= 64 ? text : String(text.prefix(60)) + "..."
        return ConfigValue.string(shown).description
    }

    // MARK: types

    func object(_ value: JSONValue, hint: String? = nil) throws(PlugboardError) -> [JSONValue.Member] {
        guard case .object(let members) = value.kind else { throw wrongType(value, expected: "an object", hint: hint) }
        return members
    }

    func array(_ value: JSONValue, hint: String? = nil) throws(PlugboardError) -> [JSONValue] {
        guard case .array(let elements) = value.kind else { throw wrongType(value, expected: "an array", hint: hint) }
        return elements
    }

    func string(_ value: JSONValue, hint: String? = nil) throws(PlugboardError) -> String {
        guard case .string(let s) = value.kind else { throw wrongType(value, expected: "a string", hint: hint) }
        return s
    }

    func bool(_ value: JSONValue) throws(PlugboardError) -> Bool {
        guard case .bool(let b) = value.kind else {
            throw wrongType(value, expected: "true or false", hint: "Write true or false, without quotes.")
        }
        return b
    }

    /// An integer; a number with no fractional part (`3.0`, `1e3`) counts, as in JSON Schema.
    func integer(_ value: JSONValue) throws(PlugboardError) -> Int {
        switch value.kind {
        case .integer(let i):
            if let exact = Int(exactly: i) { return exact }
            throw invalidValue(value, "expected an integer, found one out of range", hint: "Write a smaller number.")
        case .number(let d):
            if let exact = Int(exactly: d) { return exact }
            throw invalidValue(value, "expected an integer, found a number with a fractional part or out of range",
                               hint: "Write a whole number, such as 10.")
        default:
            throw wrongType(value, expected: "an integer",
                            hint: value.kindDescription == "a string" ? "Write the number without quotes." : nil)
        }
    }

    func number(_ value: JSONValue) throws(PlugboardError) -> Double {
        switch value.kind {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default:
            throw wrongType(value, expected: "a number",
                            hint: value.kindDescription == "a string" ? "Write the number without quotes." : nil)
        }
    }

    // MARK: errors

    /// `manifest.wrong_type`: `file:3:15: plugins[0].rank: expected an integer, found a string`.
    func wrongType(_ value: JSONValue, expected: String, hint: String? = nil) -> PlugboardError {
        PlugboardError(.manifestWrongType,
                       "\(at(value.location)): \(value.path.spoken): expected \(expected), found \(value.kindDescription)",
                       detail: nil, hint: hint)
    }

    /// `manifest.invalid_value`: `file:3:15: plugins[0].sha256: <problem>`.
    func invalidValue(_ value: JSONValue, _ problem: String, detail: String? = nil, hint: String? = nil) -> PlugboardError {
        PlugboardError(.manifestInvalidValue, "\(at(value.location)): \(value.path.spoken): \(problem)",
                       detail: detail, hint: hint)
    }

    /// `manifest.missing_key`: `file:2:5: missing key "name" in plugins[0]`.
    func missingKey(_ key: String, in object: JSONValue, detail: String? = nil, hint: String? = nil) -> PlugboardError {
        PlugboardError(.manifestMissingKey, "\(at(object.location)): missing key \(Self.quoted(key)) in \(object.path.spoken)",
                       detail: detail, hint: hint)
    }

    /// Refuses members not in `known`, in document order, naming the closest known key.
    func checkKeys(_ members: [JSONValue.Member], known: [String], in object: JSONValue) throws(PlugboardError) {
        for member in members where !known.contains(member.key) {
            let suggestion = Spelling.closest(to: member.key, among: known)
            throw PlugboardError(.manifestUnknownKey,
                "\(at(member.keyLocation)): unknown key \(Self.quoted(member.key)) in \(object.path.spoken)",
                detail: "Known keys: \(known.joined(separator: ", ")).",
                hint: suggestion.map { "Did you mean \(Self.quoted($0))?" }
                    ?? "Remove the key; docs/MANIFEST.md lists every key.")
        }
    }

    /// An environment name, or an error with the closest one.
    func environment(_ value: JSONValue) throws(PlugboardError) -> Environment {
        let name = try string(value, hint: "Write one of \"testing\", \"development\", \"staging\", \"production\".")
        if let environment = Environment(name) { return environment }
        let all = Environment.all.map(\.name)
        let suggestion = Spelling.closest(to: name, among: all)
        throw invalidValue(value, "\(Self.quoted(name)) is not an environment",
            detail: "The environments are \(all.map { "\"\($0)\"" }.joined(separator: ", ")).",
            hint: suggestion.map { "Did you mean \(Self.quoted($0))?" } ?? "Use one of the four names.")
    }
}
