/// How storage errors show user-supplied text: quoted, with control characters escaped and
/// long text shortened, so that a message stays one readable line whatever the key holds.
enum StorageText {
    /// The longest text, in characters, shown before it is cut with "...".
    static let maxShownCharacters = 80

    /// `"text"`, with `"`, `\` and control characters escaped Swift-style and text longer
    /// than ``maxShownCharacters`` cut.
    static func quote(_ text: String, maxCharacters: Int = maxShownCharacters) -> String {
        var out = "\""
        var shown = 0
        for scalar in text.unicodeScalars {
            if shown == maxCharacters {
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

    /// Why `text` cannot travel as an HTTP header value, or nil if it can: a byte outside
    /// printable ASCII (with its offset), or a space at either end (headers drop it).
    enum HeaderTextProblem {
        case byte(UInt8, offset: Int)
        case edgeSpace
    }

    static func headerTextProblem(_ text: String) -> HeaderTextProblem? {
        for (offset, byte) in text.utf8.enumerated() where byte < 0x20 || byte > 0x7E {
            return .byte(byte, offset: offset)
        }
        if text.utf8.first == UInt8(ascii: " ") || text.utf8.last == UInt8(ascii: " ") { return .edgeSpace }
        return nil
    }

    /// `0x0A`: one byte as two upper-case hex digits.
    static func hexByte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }
}
