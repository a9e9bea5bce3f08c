/// How FileStorage's messages show keys and paths: quoted, with quotes, backslashes and
/// control characters escaped and long text shortened, so that a message stays one
/// readable line whatever a key or path holds (PlugboardAPI's own helper is internal).
enum FileStorageText {
    /// The longest text, in characters, shown before it is cut with "...".
    static let maxShownCharacters = 120

    /// `"text"`, escaped and shortened.
    static func quote(_ text: String) -> String {
        var out = "\""
        var shown = 0
        for scalar in text.unicodeScalars {
            if shown == maxShownCharacters {
                out += "..."
                break
            }
            shown += 1
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
