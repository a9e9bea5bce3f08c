import PlugboardAPI

// The CLI's own codes (`cli.*`); `cli.usage` is PlugboardHost's, beside the serve codes
// that share its exit status. docs/ERRORS.md lists each.
extension PlugboardError.Code {
    /// A local file named on the command line could not be read or written.
    public static let localFile: Self = "cli.local_file"
    /// `plugboard reload` could not connect to the server.
    public static let reloadUnreachable: Self = "cli.reload_unreachable"
    /// `plugboard reload` got an answer that is not the reload API's.
    public static let reloadAnswerInvalid: Self = "cli.reload_answer_invalid"
    /// `new-plugin` found no Plugboard checkout to build the plugin against.
    public static let sdkNotFound: Self = "cli.sdk_not_found"
    /// `new-plugin` could not create its folder or write a file.
    public static let scaffoldWriteFailed: Self = "cli.scaffold_write_failed"
    /// `keygen` found a key file where it would write one.
    public static let keyExists: Self = "cli.key_exists"
    /// `sign` was given a private key file others can read.
    public static let keyInsecure: Self = "cli.key_insecure"
    /// A key file is not an Ed25519 key in the PEM form expected, or libcrypto refused it.
    public static let keyInvalid: Self = "cli.key_invalid"
}
