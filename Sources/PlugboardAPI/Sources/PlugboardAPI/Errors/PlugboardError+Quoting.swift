extension PlugboardError {
    /// `"text"` for an error message: quotes, backslashes and control characters escaped,
    /// text longer than `maxCharacters` cut with "...", so a message stays one readable
    /// line whatever a key, path or value holds. Every module's messages quote user text
    /// this way (PostgreSQL's rule: quote every name and say what it is).
    ///
    /// - Important: never pass a secret; quoting does not redact.
    public static func quoted(_ text: String, maxCharacters: Int = 80) -> String {
        StorageText.quote(text, maxCharacters: max(1, maxCharacters))
    }
}
