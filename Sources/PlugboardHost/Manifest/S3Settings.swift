import PlugboardAPI

/// The manifest's `s3` object: the key pairs `plugboard serve --s3-listen` accepts, with
/// `PLUGBOARD_S3_ACCESS_KEY_ID` / `PLUGBOARD_S3_SECRET_ACCESS_KEY` beside them.
///
/// Read with the manifest: the shape, every `${...}`, and every value written without
/// one (lengths, characters, duplicate IDs) are checked then. ``resolvedCredentials(environment:)``
/// expands the variables and checks the values again; `serve` calls it once, at start
/// (a hot-swap reload does not change the credentials).
public struct S3Settings: Sendable {
    /// One entry of `credentials`, as written.
    struct RawCredential: Sendable {
        let value: JSONValue
        let accessKeyId: JSONValue
        /// The string holding the secret: the value itself, or a wrapper's `secret`.
        let secretAccessKey: JSONValue
    }

    let credentials: [RawCredential]
    let manifestPath: String

    /// How many key pairs `credentials` holds.
    public var credentialCount: Int { credentials.count }

    /// The keys of the `s3` object and of each credential.
    static let keys = ["credentials"]
    static let credentialKeys = ["accessKeyId", "secretAccessKey"]
    /// At most this many key pairs.
    static let maxCredentials = 100
    static let accessKeyIdLengths = 3...128

    /// Every key pair, `${VAR}`s expanded from `variables`, in manifest order.
    ///
    /// - Throws: `manifest.missing_variable` for a `${VAR}` without default that is not
    ///   set; `manifest.invalid_value` for a value that, expanded, breaks the rules, or for
    ///   two pairs with the same access key ID. No message shows a secret.
    /// - Important: the result holds the secrets in clear; its description hides them.
    public func resolvedCredentials(environment variables: [String: String]) throws(PlugboardError) -> [S3KeyPair] {
        var budget = VariableExpander.Budget()
        var pairs: [S3KeyPair] = []
        var firstIndex: [String: Int] = [:]
        for (index, credential) in credentials.enumerated() {
            let id = try expand(credential.accessKeyId, variables: variables, budget: &budget)
            let secret = try expand(credential.secretAccessKey, variables: variables, budget: &budget)
            try Self.checkAccessKeyId(id, credential.accessKeyId, source: manifestPath, expanded: true)
            try Self.checkSecret(secret, credential.secretAccessKey, source: manifestPath, expanded: true)
            if let first = firstIndex[id] {
                throw Self.duplicate(credential.accessKeyId, first: first, index: index, source: manifestPath)
            }
            firstIndex[id] = index
            pairs.append(S3KeyPair(accessKeyID: id, secretAccessKey: secret))
        }
        return pairs
    }

    /// The secrets that can be expanded from `variables` (those whose variables are
    /// missing are left out: they cannot leak), for the host's ``SecretScrubber``.
    func knownSecrets(environment variables: [String: String]) -> [String] {
        var budget = VariableExpander.Budget()
        return credentials.compactMap { credential in
            guard case .string(let text) = credential.secretAccessKey.kind,
                  let result = try? VariableExpander.expand(text, variables: variables, budget: &budget),
                  case .success(let secret) = result else { return nil }
            return secret
        }
    }

    private func expand(_ value: JSONValue, variables: [String: String],
                        budget: inout VariableExpander.Budget) throws(PlugboardError) -> String {
        guard case .string(let text) = value.kind else { return "" }
        let result: Result<String, VariableExpander.Refusal>
        do {
            result = try VariableExpander.expand(text, variables: variables, budget: &budget)
        } catch {
            // Checked when the manifest was read; kept as an error rather than a trap.
            throw PlugboardError(.manifestInvalidValue, "\(manifestPath):\(value.location): \(value.path.spoken): malformed variable reference",
                detail: error.reason, hint: "Write ${NAME} or ${NAME:-default}; write $${ for a literal \"${\".")
        }
        switch result {
        case .success(let expanded):
            return expanded
        case .failure(.missing(let name)):
            throw PlugboardError(.manifestMissingVariable,
                "\(manifestPath):\(value.location): environment variable \"\(name)\" is not set, needed by \(value.path.spoken)",
                detail: "The S3 API's credentials use ${\(name)} in \(value.path.spoken), with no default.",
                hint: "Set \(name) in the environment, or write ${\(name):-default} to give a default.")
        case .failure(.tooLarge(let needed, _)):
            throw PlugboardError(.manifestExpansionTooLarge,
                "\(manifestPath):\(value.location): \(value.path.spoken): expanding variables goes beyond the limit of \(budget.limit >> 20) MiB",
                detail: "Expected at most \(budget.limit) bytes once ${...} references are expanded; found \(needed) bytes.",
                hint: "An S3 credential is at most 256 characters; check the variable it names.")
        }
    }

    // MARK: rules, shared with the decoder

    /// "once expanded" for a value with `${...}`s, so that the message says why a value
    /// that looks right in the file is refused.
    private static func suffix(_ expanded: Bool, _ value: JSONValue) -> String {
        guard expanded, case .string(let text) = value.kind, text.contains("${") else { return "" }
        return " once its variables are expanded"
    }

    static func checkAccessKeyId(_ id: String, _ value: JSONValue, source: String, expanded: Bool) throws(PlugboardError) {
        let count = id.unicodeScalars.count
        let at = "\(source):\(value.location): \(value.path.spoken)"
        let rule = "An access key ID is 3 to 128 printable ASCII characters, without spaces or \"/\"."
        guard accessKeyIdLengths.contains(count) else {
            throw PlugboardError(.manifestInvalidValue,
                "\(at): expected an access key ID of 3 to 128 characters, found \(count) character\(count == 1 ? "" : "s")\(suffix(expanded, value))",
                detail: rule, hint: "Write the access key ID the S3 clients use, such as \"plugboard-admin\".")
        }
        if let offset = id.unicodeScalars.firstIndex(where: { !(0x21...0x7E).contains($0.value) || $0 == "/" }) {
            let position = id.unicodeScalars.distance(from: id.unicodeScalars.startIndex, to: offset) + 1
            let c = id.unicodeScalars[offset]
            let what = c == " " ? "a space" : c == "/" ? "a \"/\"" : "a character that is not printable ASCII"
            throw PlugboardError(.manifestInvalidValue,
                "\(at): expected an access key ID of printable ASCII without spaces or \"/\", found \(what) at character \(position)\(suffix(expanded, value))",
                detail: rule, hint: "Use letters, digits and punctuation such as \"-\" and \"_\".")
        }
    }

    /// Never quotes the secret: only what about it breaks ``CredentialRule``.
    static func checkSecret(_ secret: String, _ value: JSONValue, source: String, expanded: Bool) throws(PlugboardError) {
        guard let violation = CredentialRule.violation(secret, what: "a secret access key") else { return }
        let tooLong = secret.unicodeScalars.count > CredentialRule.lengths.upperBound
        throw PlugboardError(.manifestInvalidValue,
            "\(source):\(value.location): \(value.path.spoken): \(violation)\(suffix(expanded, value))",
            detail: CredentialRule.text + " S3 clients sign every request with the secret.",
            hint: tooLong ? "Use a shorter secret." : CredentialRule.hint)
    }

    static func duplicate(_ value: JSONValue, first: Int, index: Int, source: String) -> PlugboardError {
        PlugboardError(.manifestInvalidValue,
            "\(source):\(value.location): \(value.path.spoken): expected a unique access key ID, found the one of s3.credentials[\(first)] again",
            detail: "s3.credentials[\(first)] and s3.credentials[\(index)] have the same accessKeyId; a request signed with it could not tell which secret to check.",
            hint: "Give each key pair its own access key ID, or remove one of the two.")
    }
}

/// One S3 key pair the S3 API accepts. Its description shows the ID, never the secret.
public struct S3KeyPair: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    public let accessKeyID: String
    /// In clear: never print or log it.
    public let secretAccessKey: String

    public init(accessKeyID: String, secretAccessKey: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "S3KeyPair(accessKeyID: \(ConfigValue.string(accessKeyID).description), secretAccessKey: \(ConfigSecrets.marker))" }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": ConfigSecrets.marker], displayStyle: .struct)
    }
}

extension S3Settings: CustomStringConvertible, CustomReflectable {
    /// `s3: N credential(s)`: no ID, no secret.
    public var description: String { "s3: \(credentials.count) credential\(credentials.count == 1 ? "" : "s")" }

    public var customMirror: Mirror { Mirror(self, children: ["credentialCount": credentials.count], displayStyle: .struct) }
}
