import PlugboardAPI
import PlugboardJSON

/// How secrets are hidden in output: the marker, the redacted configuration, the scrubbed
/// text. Which keys are secret-looking is decided in PlugboardJSON, whose parser already
/// needs it to keep secret values out of its messages.
extension ConfigSecrets {
    /// What output shows in place of a secret: `<redacted>`.
    public static let marker = "<redacted>"

    /// True when `value` is a secret wrapper: an object whose only member is `secret`.
    static func isWrapper(_ value: JSONValue) -> Bool {
        guard case .object(let members) = value.kind, members.count == 1 else { return false }
        return members[0].key == "secret"
    }

    /// `value` as written, with every secret replaced by ``marker``.
    static func redacted(_ value: JSONValue) -> ConfigValue {
        var secrets: [String] = []
        collectSecrets(value, underSecretKey: false, into: &secrets)
        let scrub = Array(Set(secrets.filter { $0.count >= 4 })).sorted { $0.count > $1.count }
        return redact(value, underSecretKey: false, scrub: scrub)
    }

    /// The strings the plugin receives (`resolved`, variables expanded) at every place
    /// where `raw`, the config as written, holds a secret.
    static func secretValues(raw: JSONValue, resolved: ConfigValue, into out: inout [String]) {
        secretValues(raw: raw, resolved: resolved, underSecretKey: false, into: &out)
    }

    private static func secretValues(raw: JSONValue, resolved: ConfigValue, underSecretKey: Bool, into out: inout [String]) {
        if isWrapper(raw) || underSecretKey {
            strings(in: resolved, into: &out)
            return
        }
        switch (raw.kind, resolved) {
        case (.object(let members), .object(let values)):
            for m in members {
                if let v = values[m.key] { secretValues(raw: m.value, resolved: v, underSecretKey: isSecretKey(m.key), into: &out) }
            }
        case (.array(let elements), .array(let values)):
            for (e, v) in zip(elements, values) { secretValues(raw: e, resolved: v, underSecretKey: false, into: &out) }
        default:
            break
        }
    }

    private static func strings(in value: ConfigValue, into out: inout [String]) {
        switch value {
        case .string(let s): out.append(s)
        case .object(let members): for v in members.values { strings(in: v, into: &out) }
        case .array(let elements): for e in elements { strings(in: e, into: &out) }
        default: break
        }
    }

    private static func collectSecrets(_ value: JSONValue, underSecretKey: Bool, into secrets: inout [String]) {
        if isWrapper(value) || underSecretKey {
            strings(in: value, into: &secrets)
            return
        }
        switch value.kind {
        case .object(let members):
            for m in members { collectSecrets(m.value, underSecretKey: isSecretKey(m.key), into: &secrets) }
        case .array(let elements):
            for e in elements { collectSecrets(e, underSecretKey: false, into: &secrets) }
        default:
            break
        }
    }

    private static func strings(in value: JSONValue, into out: inout [String]) {
        switch value.kind {
        case .string(let s): out.append(s)
        case .object(let members): for m in members { strings(in: m.value, into: &out) }
        case .array(let elements): for e in elements { strings(in: e, into: &out) }
        default: break
        }
    }

    private static func redact(_ value: JSONValue, underSecretKey: Bool, scrub: [String]) -> ConfigValue {
        if isWrapper(value) { return .string(marker) }
        if underSecretKey {
            if case .null = value.kind { return .null }
            return .string(marker)
        }
        switch value.kind {
        case .object(let members):
            var out: [String: ConfigValue] = [:]
            for m in members { out[m.key] = redact(m.value, underSecretKey: isSecretKey(m.key), scrub: scrub) }
            return .object(out)
        case .array(let elements):
            return .array(elements.map { redact($0, underSecretKey: false, scrub: scrub) })
        case .string(let s):
            return .string(scrubbed(s, secrets: scrub))
        default:
            return value.configValue
        }
    }

    /// `text` with every secret's text and any URL password replaced by the marker.
    static func scrubbed(_ text: String, secrets: [String]) -> String {
        var out = text
        for secret in secrets where out.contains(secret) {
            out = out.replacing(secret, with: marker)
        }
        return hidingURLPasswords(out)
    }

    /// Replaces the password in `scheme://user:password@host`.
    static func hidingURLPasswords(_ text: String) -> String {
        guard text.contains("://") else { return text }
        var out = ""
        var rest = Substring(text)
        while let scheme = rest.firstRange(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out += authority[...colon] + marker + authority[at...]
            } else {
                out += authority
            }
            rest = rest[authorityEnd...]
        }
        return out + rest
    }
}
