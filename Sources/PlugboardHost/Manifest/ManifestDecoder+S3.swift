import PlugboardAPI

extension ManifestDecoder {
    /// The `s3` object: `{"credentials": [{"accessKeyId": "...", "secretAccessKey": "..."}]}`.
    func decodeS3(_ value: JSONValue) throws(PlugboardError) -> S3Settings {
        let members = try reader.object(value,
            hint: "Write \"s3\" as an object such as {\"credentials\": [{\"accessKeyId\": \"...\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}]}.")
        var credentials: [S3Settings.RawCredential]?
        for member in members {
            switch member.key {
            case "credentials":
                credentials = try decodeS3Credentials(member.value)
            default:
                try reader.checkKeys([member], known: S3Settings.keys, in: value)
            }
        }
        guard let credentials else {
            throw reader.missingKey("credentials", in: value, detail: "The \"s3\" object lists the key pairs the S3 API accepts.",
                hint: "Add \"credentials\": [{\"accessKeyId\": \"...\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}], or remove \"s3\".")
        }
        return S3Settings(credentials: credentials, manifestPath: reader.source)
    }

    private func decodeS3Credentials(_ value: JSONValue) throws(PlugboardError) -> [S3Settings.RawCredential] {
        let elements = try reader.array(value, hint: "Write \"credentials\" as an array of {\"accessKeyId\": ..., \"secretAccessKey\": ...} objects.")
        guard !elements.isEmpty else {
            throw reader.invalidValue(value, "expected at least one key pair, found none",
                detail: "An empty list would accept no S3 client.",
                hint: "Add a key pair, or remove \"s3\" and set PLUGBOARD_S3_ACCESS_KEY_ID and PLUGBOARD_S3_SECRET_ACCESS_KEY.")
        }
        guard elements.count <= S3Settings.maxCredentials else {
            throw reader.invalidValue(value, "expected at most \(S3Settings.maxCredentials) key pairs, found \(elements.count)",
                detail: "The S3 API checks a request against one of at most \(S3Settings.maxCredentials) key pairs.",
                hint: "Let clients share key pairs, or remove the ones no longer used.")
        }
        var out: [S3Settings.RawCredential] = []
        var literalIds: [String: Int] = [:]
        for (index, element) in elements.enumerated() {
            let credential = try decodeS3Credential(element)
            if let id = try literal(credential.accessKeyId) {
                try S3Settings.checkAccessKeyId(id, credential.accessKeyId, source: reader.source, expanded: false)
                if let first = literalIds[id] {
                    throw S3Settings.duplicate(credential.accessKeyId, first: first, index: index, source: reader.source)
                }
                literalIds[id] = index
            }
            if let secret = try literal(credential.secretAccessKey) {
                try S3Settings.checkSecret(secret, credential.secretAccessKey, source: reader.source, expanded: false)
            }
            out.append(credential)
        }
        return out
    }

    private func decodeS3Credential(_ value: JSONValue) throws(PlugboardError) -> S3Settings.RawCredential {
        let members = try reader.object(value,
            hint: "Each key pair is an object {\"accessKeyId\": \"...\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}.")
        var id: JSONValue?
        var secret: JSONValue?
        for member in members {
            let v = member.value
            switch member.key {
            case "accessKeyId":
                _ = try reader.string(v, hint: "Write the access key ID as a string, such as \"plugboard-admin\" or \"${S3_KEY_ID}\".")
                id = v
            case "secretAccessKey":
                if ConfigSecrets.isWrapper(v), case .object(let inner) = v.kind {
                    _ = try reader.string(inner[0].value,
                        hint: "An object whose only member is \"secret\" marks a secret string: write {\"secret\": \"${S3_SECRET}\"}.")
                    secret = inner[0].value
                } else {
                    guard case .string = v.kind else {
                        throw reader.wrongType(v, expected: "a string or {\"secret\": \"...\"}",
                            hint: "Write the secret as a string, or as {\"secret\": \"${S3_SECRET}\"}; it is hidden in output either way.")
                    }
                    secret = v
                }
            default:
                try reader.checkKeys([member], known: S3Settings.credentialKeys, in: value)
            }
        }
        guard let id else {
            throw reader.missingKey("accessKeyId", in: value, detail: "Each key pair has an access key ID and a secret access key.",
                                    hint: "Add \"accessKeyId\": \"${S3_KEY_ID}\".")
        }
        guard let secret else {
            throw reader.missingKey("secretAccessKey", in: value, detail: "Each key pair has an access key ID and a secret access key.",
                                    hint: "Add \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}.")
        }
        return S3Settings.RawCredential(value: value, accessKeyId: id, secretAccessKey: secret)
    }

    /// The string's value when it names no variable (`$${` read as `${`), nil when it
    /// does; a malformed `${...}` is refused here, for every manifest.
    private func literal(_ value: JSONValue) throws(PlugboardError) -> String? {
        guard case .string(let text) = value.kind else { return nil }
        guard text.contains("$") else { return text }
        let parts: [VariableExpander.Part]
        do {
            parts = try VariableExpander.parts(of: text)
        } catch {
            throw reader.invalidValue(value, "malformed variable reference", detail: error.reason,
                hint: "Write ${NAME} or ${NAME:-default}; write $${ for a literal \"${\".")
        }
        var out = ""
        for part in parts {
            guard case .literal(let l) = part else { return nil }
            out += l
        }
        return out
    }
}
