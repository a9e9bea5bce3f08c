import PlugboardAPI

/// The refusals of a configuration `serve` cannot start with, whichever module checks it:
/// the CLI its flags, ``CredentialRule`` the tokens, the S3 front end its own
/// configuration. The CLI exits with status 2 for each.
extension PlugboardError.Code {
    /// The command line is wrong: an unknown option, a missing value or argument, a flag's
    /// value a component's configuration refuses.
    public static let usage: Self = "cli.usage"
    /// `serve` on a non-loopback address without `PLUGBOARD_ADMIN_TOKEN`, or the S3 API
    /// without a key pair.
    public static let serveUnprotected: Self = "serve.unprotected_listen"
    /// `serve` with a token or S3 secret that breaks ``CredentialRule``.
    public static let serveWeakCredential: Self = "serve.weak_credential"
}
