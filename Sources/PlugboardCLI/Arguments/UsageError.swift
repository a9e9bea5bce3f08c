import PlugboardAPI
import PlugboardHost

/// Errors of the command line itself; the CLI exits with status 2 for them.
enum UsageError {
    static func make(_ message: String, detail: String? = nil, hint: String? = nil) -> PlugboardError {
        PlugboardError(.usage, message, detail: detail, hint: hint)
    }

    /// The one hint of every usage error that has no better one: the help of the command
    /// the words reached (`plugboard storage put --help`), not the root's.
    static func helpHint(_ path: [String]) -> String {
        "Run \"\((["plugboard"] + path).joined(separator: " ")) --help\" for usage."
    }

    /// "Did you mean ...?" for the closest of `candidates`, if it is close enough (the
    /// manifest's rule, so the CLI and the manifest suggest alike).
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        Spelling.closest(to: word, among: candidates)
    }
}
