import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardJSON

extension ManifestDecoder {
    /// The `trust` object: `{"requireSignatures": true, "keys": [{"name": "release-2026",
    /// "ed25519": "<base64 of the 32-byte public key>"}]}`.
    func decodeTrust(_ value: JSONValue) throws(PlugboardError) -> ManifestTrust {
        let members = try reader.object(value,
            hint: "Write \"trust\" as an object such as {\"requireSignatures\": true, \"keys\": [{\"name\": \"release-2026\", \"ed25519\": \"...\"}]}.")
        var required = false
        var keys: [TrustedKey] = []
        var keysValue: JSONValue?
        for member in members {
            switch member.key {
            case "requireSignatures":
                required = try reader.bool(member.value)
            case "keys":
                keys = try decodeTrustedKeys(member.value)
                keysValue = member.value
            default:
                try reader.checkKeys([member], known: ManifestTrust.keys, in: value)
            }
        }
        if required && keys.isEmpty {
            throw reader.invalidValue(keysValue ?? value, "requireSignatures is true but no key is listed",
                detail: "With no trusted key every plugin would be refused.",
                hint: "List the public key that signs your plugins in \"keys\" (plugboard keygen prints the entry).")
        }
        return ManifestTrust(requireSignatures: required, keys: keys)
    }

    private func decodeTrustedKeys(_ value: JSONValue) throws(PlugboardError) -> [TrustedKey] {
        let elements = try reader.array(value, hint: "Write \"keys\" as an array of {\"name\": ..., \"ed25519\": ...} objects.")
        var out: [TrustedKey] = []
        for element in elements {
            let key = try decodeTrustedKey(element)
            if let same = out.first(where: { $0.name == key.name }) {
                throw reader.invalidValue(element, "key name \(ManifestReader.quoted(key.name)) is listed twice",
                    detail: "Keys \(same.keyID) and \(key.keyID) are both named \(ManifestReader.quoted(key.name)).",
                    hint: "Give each key a unique name.")
            }
            if let same = out.first(where: { $0.keyID == key.keyID }) {
                throw reader.invalidValue(element, "key \(key.keyID) is listed twice",
                    detail: "\(ManifestReader.quoted(same.name)) and \(ManifestReader.quoted(key.name)) are the same public key.",
                    hint: "List each key once.")
            }
            out.append(key)
        }
        return out
    }

    private func decodeTrustedKey(_ value: JSONValue) throws(PlugboardError) -> TrustedKey {
        let members = try reader.object(value,
            hint: "Each key is an object {\"name\": \"release-2026\", \"ed25519\": \"<base64 of the 32-byte public key>\"}.")
        var name: String?
        var publicKey: Ed25519PublicKey?
        for member in members {
            let v = member.value
            switch member.key {
            case "name":
                let text = try reader.string(v, hint: "Write the key's name as a string, such as \"release-2026\".")
                guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                    throw reader.invalidValue(v, text.isEmpty ? "key name is empty" : "key name contains a control character",
                        hint: "Name the key after who signs with it and when, such as \"release-2026\".")
                }
                name = text
            case "ed25519":
                let text = try reader.string(v, hint: "Write the public key as the base64 of its 32 bytes, as plugboard keygen prints it.")
                guard let raw = Base64.decode(text), let key = try? Ed25519PublicKey(rawRepresentation: raw) else {
                    let found = Base64.decode(text).map { "\($0.count) bytes" } ?? "text that is not base64"
                    throw reader.invalidValue(v, "not an Ed25519 public key",
                        detail: "Expected the base64 of 32 bytes (44 characters), found \(found).",
                        hint: "Copy the \"ed25519\" value plugboard keygen printed, or take the key's last 32 bytes: openssl pkey -pubin -in KEY.pub -outform DER | tail -c 32 | base64.")
                }
                publicKey = key
            default:
                try reader.checkKeys([member], known: ManifestTrust.keyEntryKeys, in: value)
            }
        }
        guard let name else {
            throw reader.missingKey("name", in: value, detail: "Each trusted key has a name, which records and errors show.",
                                    hint: "Add \"name\": \"release-2026\".")
        }
        guard let publicKey else {
            throw reader.missingKey("ed25519", in: value, detail: "Each trusted key has its Ed25519 public key.",
                                    hint: "Add the \"ed25519\" value plugboard keygen printed.")
        }
        return TrustedKey(name: name, publicKey: publicKey)
    }

    /// A plugin entry's `signature`, in its one form.
    func decodeSignature(_ v: JSONValue) throws(PlugboardError) -> PluginSignature {
        let text = try reader.string(v, hint: "Write the signature as plugboard sign prints it: \"ed25519:<key id>:<base64 signature>\".")
        do {
            return try PluginSignature(parsing: text)
        } catch {
            throw reader.invalidValue(v, "not a plugin signature", detail: error.reason,
                hint: "Copy the \"signature\" plugboard sign printed for this file (ed25519:<key id>:<base64 signature>).")
        }
    }
}
