import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// Reads one of the fleet's records (a JSON object) member by member, refusing a missing
/// or mistyped member with `fleet.record_invalid`, which names the record.
struct FleetJSON {
    let value: JSONValue
    /// What the record is, for messages (`hosts/web-1`).
    let what: String

    init(_ value: JSONValue, what: String) {
        self.value = value
        self.what = what
    }

    static func parse(_ bytes: [UInt8], what: String) throws(PlugboardError) -> FleetJSON {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes, source: what)
        } catch {
            throw invalid(what, "it is not JSON (\(error.message))")
        }
        guard case .object = root.kind else { throw invalid(what, "it is \(root.kindDescription), not an object") }
        return FleetJSON(root, what: what)
    }

    static func invalid(_ what: String, _ why: String) -> PlugboardError {
        PlugboardError(.fleetRecordInvalid, "fleet record \"\(what)\" is invalid: \(why)",
                       hint: "Write it with plugboard (fleet set, fleet rollout, serve --fleet); docs/FLEET.md describes each record.")
    }

    private func member(_ key: String) throws(PlugboardError) -> JSONValue {
        guard let v = value[key], !v.isNull else { throw Self.invalid(what, "member \"\(key)\" is missing") }
        return v
    }

    func string(_ key: String) throws(PlugboardError) -> String {
        let v = try member(key)
        guard case .string(let s) = v.kind else { throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected a string") }
        return s
    }

    func optionalString(_ key: String) throws(PlugboardError) -> String? {
        guard let v = value[key], !v.isNull else { return nil }
        return try string(key)
    }

    func int(_ key: String) throws(PlugboardError) -> Int64 {
        let v = try member(key)
        guard case .integer(let i) = v.kind else { throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected an integer") }
        return i
    }

    func double(_ key: String) throws(PlugboardError) -> Double {
        let v = try member(key)
        switch v.kind {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected a number")
        }
    }

    func bool(_ key: String) throws(PlugboardError) -> Bool {
        let v = try member(key)
        guard case .bool(let b) = v.kind else { throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected a boolean") }
        return b
    }

    func object(_ key: String) throws(PlugboardError) -> FleetJSON? {
        guard let v = value[key], !v.isNull else { return nil }
        guard case .object = v.kind else { throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected an object") }
        return FleetJSON(v, what: what)
    }

    func array(_ key: String) throws(PlugboardError) -> [FleetJSON] {
        let v = try member(key)
        guard case .array(let elements) = v.kind else { throw Self.invalid(what, "\"\(key)\" is \(v.kindDescription), expected an array") }
        return elements.map { FleetJSON($0, what: what) }
    }

    func strings(_ key: String) throws(PlugboardError) -> [String] {
        var out: [String] = []
        for element in try array(key) {
            guard case .string(let s) = element.value.kind else {
                throw Self.invalid(what, "\"\(key)\" holds \(element.value.kindDescription), expected strings")
            }
            out.append(s)
        }
        return out
    }
}

extension JSONValue {
    var isNull: Bool { if case .null = kind { return true } else { return false } }
}

extension JSONOutput {
    /// Compact JSON bytes, as records are stored.
    var bytes: [UInt8] { Array(render(pretty: false).utf8) }
}
