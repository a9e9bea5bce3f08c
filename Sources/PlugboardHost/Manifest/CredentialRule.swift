import PlugboardAPI

/// The one rule for every credential a client is checked against: `PLUGBOARD_API_TOKEN`,
/// `PLUGBOARD_ADMIN_TOKEN`, and every S3 secret access key (the manifest's
/// `s3.credentials` and `PLUGBOARD_S3_SECRET_ACCESS_KEY`). A one-character admin token
/// guards `/v1/admin` on `0.0.0.0` no better than none, so a credential that breaks the
/// rule is refused when `serve` starts, on loopback too, rather than trusted.
public enum CredentialRule {
    public static let lengths = 8...256
    public static let text = "A credential (PLUGBOARD_API_TOKEN, PLUGBOARD_ADMIN_TOKEN, an S3 secret access key) is 8 to 256 printable ASCII characters, without spaces."
    public static let hint = "Use a long random value, such as the output of `openssl rand -base64 30`."

    /// What in `secret`, a `what` ("a secret access key"), breaks the rule, in words that
    /// never quote it; nil when it keeps it.
    public static func violation(_ secret: String, what: String) -> String? {
        let scalars = secret.unicodeScalars
        guard lengths.contains(scalars.count) else {
            return "expected \(what) of 8 to 256 characters, found \(scalars.count) character\(scalars.count == 1 ? "" : "s")"
        }
        if let offset = scalars.firstIndex(where: { !(0x21...0x7E).contains($0.value) }) {
            let found = scalars[offset] == " " ? "a space" : "a character that is not printable ASCII"
            return "expected \(what) of printable ASCII without spaces, found \(found) at character \(scalars.distance(from: scalars.startIndex, to: offset) + 1)"
        }
        return nil
    }
}

extension CredentialRule {
    /// `serve.weak_credential` for the environment variable `name` whose value, a `what`,
    /// breaks the rule; nil when it keeps it. The message never quotes the value.
    public static func refusal(_ value: String, variable name: String, what: String) -> PlugboardError? {
        guard let violation = violation(value, what: what) else { return nil }
        return PlugboardError(.serveWeakCredential, "refusing to serve with \(name) as it is: \(violation)",
                              detail: text, hint: hint + " Set \(name) to it here and in the clients.")
    }
}
