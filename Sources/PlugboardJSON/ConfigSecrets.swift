/// Which configuration values are secrets, and how they are hidden in output.
///
/// A value is secret when it is
/// - written as a secret wrapper, `{"secret": "..."}`: an object whose only member is
///   `secret` (its value must be a string; the plugin receives that plain string), or
/// - the value of a secret-looking key, at any depth: a key that, lower-cased and with
///   `_`, `-`, `.` and spaces removed, contains one of ``secretKeyWords``
///   (`password`, `DB_PASSWORD`, `accessKeyId`, `secret_access_key`, `api-key`,
///   `clientSecret`, `tokenFile`, ...). The whole value is hidden, whatever its type,
///   except `null`.
///
/// The rule errs on the side of hiding: `tokenEndpoint` is hidden too. Hiding only
/// changes output; the plugin always receives the real value.
///
/// Output also hides a secret's text (four characters or more) wherever else it occurs
/// in the configuration, and the password of a URL with user information
/// (`postgres://user:<redacted>@host/db`). What a plugin hands back (errors, log lines) is
/// scrubbed of the secrets' resolved values by PlugboardHost's `SecretScrubber`.
public enum ConfigSecrets {
    /// The words that make a key secret-looking (after normalizing, see above).
    public static let secretKeyWords = [
        "secret", "password", "passwd", "passphrase", "token", "credential", "apikey", "accesskey",
        "privatekey", "signingkey", "encryptionkey", "authorization", "cookie",
    ]

    /// True when `key`'s value is hidden in output.
    public static func isSecretKey(_ key: String) -> Bool {
        let normalized = String(key.lowercased().unicodeScalars.filter { !"_-. ".unicodeScalars.contains($0) })
        return secretKeyWords.contains { normalized.contains($0) }
    }
}
