import PlugboardAPI

/// How FileStorage's messages show keys and paths: PlugboardAPI's quoting, with room for
/// the longer paths a file store names.
enum FileStorageText {
    /// The longest text, in characters, shown before it is cut with "...".
    static let maxShownCharacters = 120

    /// `"text"`, escaped and shortened.
    static func quote(_ text: String) -> String {
        PlugboardError.quoted(text, maxCharacters: maxShownCharacters)
    }
}
