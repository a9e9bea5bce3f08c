import PlugboardAPI
import PlugboardJSON

extension ManifestDecoder {
    /// The `s3` object: `{"credentials": [{"accessKeyId": "...", "secretAccessKey": "..."}],
    /// "signatureV2": false}`. `credentials` may be left out when `signatureV2` is given
    /// (the pair then comes from the environment).
    func decodeS3(_ value: JSONValue) throws(PlugboardError) -> S3Settings {
        let members = try reader.object(value,
            hint: "Write \"s3\" as an object such as {\"credentials\": [{\"accessKeyId\": \"...\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}]}.")
        var credentials: [S3Settings.RawCredential]?
        var signatureV2: Bool?
        for member in members {
            switch member.key {
            case "credentials":
                credentials = try decodeS3Credentials(member.value)
            case "signatureV2":
                signatureV2 = try reader.bool(member.value)
            default:
                try reader.checkKeys([member], known: S3Settings.keys, in: value)
            }
        }
        guard credentials != nil || signatureV2 != nil else {
            throw reader.missingKey("credentials", in: value, detail: "The \"s3\" object lists the key pairs the S3 API accepts.",
                hint: "Add \"credentials\": [{\"accessKeyId\": \"...\", \"secretAccessKey\": {\"secret\": \"${S3_SECRET}\"}}], or remove \"s3\".")
        }
        return S3Settings(credentials: credentials ?? [], signatureV2: signatureV2 ?? false, manifestPath: reader.source)
    }

    /// The pairs as written, 1 to 100 of them (the schema's bounds); what their values must
    /// be is the S3 front end's rule (`S3Router.Configuration`). A malformed `${...}` is
    /// refused here, for every manifest.
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
        for element in elements {
            let credential = try decodeS3Credential(element)
            try checkReferences(credential.accessKeyId)
            try checkReferences(credential.secretAccessKey)
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

    /// Refuses a malformed `${...}` in the string.
    private func checkReferences(_ value: JSONValue) throws(PlugboardError) {
        guard case .string(let text) = value.kind, text.contains("$") else { return }
        do {
            _ = try VariableExpander.parts(of: text)
        } catch {
            throw reader.invalidValue(value, "malformed variable reference", detail: error.reason,
                hint: "Write ${NAME} or ${NAME:-default}; write $${ for a literal \"${\".")
        }
    }
}
