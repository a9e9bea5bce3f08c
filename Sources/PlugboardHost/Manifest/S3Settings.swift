import PlugboardAPI
import PlugboardJSON

/// The manifest's `s3` object: the key pairs `plugboard serve --s3-listen` accepts, with
/// `PLUGBOARD_S3_ACCESS_KEY_ID` / `PLUGBOARD_S3_SECRET_ACCESS_KEY` beside them, and
/// whether it serves Signature Version 2 too (``signatureV2``).
///
/// The manifest only reads it: the shape (1 to 100 pairs) and every `${...}` are checked
/// when the manifest is read, and ``resolvedCredentials(environment:)`` expands the
/// variables. What the values must be (lengths, characters, unique IDs, at least one pair
/// in all) is the S3 front end's rule, checked once by PlugboardS3Server's
/// `S3Router.Configuration` when `serve` starts (a hot-swap reload does not change the
/// credentials).
public struct S3Settings: Sendable {
    /// One entry of `credentials`, as written.
    struct RawCredential: Sendable {
        let value: JSONValue
        let accessKeyId: JSONValue
        /// The string holding the secret: the value itself, or a wrapper's `secret`.
        let secretAccessKey: JSONValue
    }

    let credentials: [RawCredential]
    /// `signatureV2`: whether the S3 API also serves Signature Version 2 (HMAC-SHA1,
    /// `Authorization: AWS AKID:signature`, V2 presigned URLs and forms); off by default.
    public let signatureV2: Bool
    let manifestPath: String

    init(credentials: [RawCredential], signatureV2: Bool = false, manifestPath: String) {
        self.credentials = credentials
        self.signatureV2 = signatureV2
        self.manifestPath = manifestPath
    }

    /// How many key pairs `credentials` holds.
    public var credentialCount: Int { credentials.count }

    /// The keys of the `s3` object and of each credential.
    static let keys = ["credentials", "signatureV2"]
    static let credentialKeys = ["accessKeyId", "secretAccessKey"]
    /// At most this many key pairs in the list.
    static let maxCredentials = 100

    /// Every key pair, `${VAR}`s expanded from `variables`, in manifest order, each with
    /// where it was written (``S3Credential/Origin/manifest(_:)``).
    ///
    /// - Throws: `manifest.missing_variable` for a `${VAR}` without default that is not
    ///   set, and past the expansion limit. The values are not
    ///   checked here (`S3Router.Configuration.validate()` does). No message shows a secret.
    /// - Important: the result holds the secrets in clear; its description hides them.
    public func resolvedCredentials(environment variables: [String: String]) throws(PlugboardError) -> [S3Credential] {
        var budget = VariableExpander.Budget()
        var pairs: [S3Credential] = []
        for (index, credential) in credentials.enumerated() {
            let id = try expand(credential.accessKeyId, variables: variables, budget: &budget)
            let secret = try expand(credential.secretAccessKey, variables: variables, budget: &budget)
            pairs.append(S3Credential(accessKeyID: id, secretAccessKey: secret, origin: .manifest(manifestPlace(index, credential))))
        }
        return pairs
    }

    /// The pairs as written, without expanding anything: a value that names variables
    /// (`${...}`) is left empty, and its place says so, for the rules that can be checked
    /// from the file alone (`S3Router.Configuration.checkWritten`).
    public func writtenCredentials() -> [S3Credential] {
        var budget = VariableExpander.Budget()
        return credentials.enumerated().map { index, credential in
            func literal(_ value: JSONValue) -> String {
                guard !Self.namesVariables(value), case .string(let text) = value.kind,
                      case .success(let written)? = try? VariableExpander.expand(text, variables: [:], budget: &budget) else { return "" }
                return written
            }
            return S3Credential(accessKeyID: literal(credential.accessKeyId), secretAccessKey: literal(credential.secretAccessKey),
                                origin: .manifest(manifestPlace(index, credential)))
        }
    }

    /// Where pair `index` was written, as refusals name it.
    private func manifestPlace(_ index: Int, _ credential: RawCredential) -> S3Credential.ManifestPlace {
        S3Credential.ManifestPlace(index: index, accessKeyID: place(credential.accessKeyId),
                                   secretAccessKey: place(credential.secretAccessKey),
                                   accessKeyIDNamesVariables: Self.namesVariables(credential.accessKeyId),
                                   secretNamesVariables: Self.namesVariables(credential.secretAccessKey))
    }

    private func place(_ value: JSONValue) -> String { "\(manifestPath):\(value.location): \(value.path.spoken)" }

    /// Whether the string has a `${...}` (not `$${`, which is a literal).
    private static func namesVariables(_ value: JSONValue) -> Bool {
        guard case .string(let text) = value.kind, text.contains("$"),
              let parts = try? VariableExpander.parts(of: text) else { return false }
        return parts.contains { if case .literal = $0 { false } else { true } }
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
}

extension S3Settings: CustomStringConvertible, CustomReflectable {
    /// `s3: N credential(s)`: no ID, no secret.
    public var description: String {
        "s3: \(credentials.count) credential\(credentials.count == 1 ? "" : "s")\(signatureV2 ? ", signature V2" : "")"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["credentialCount": credentials.count, "signatureV2": signatureV2], displayStyle: .struct)
    }
}
