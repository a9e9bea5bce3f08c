import PlugboardAPI

/// How the test kit shows keys, values and errors in one line of a report.
enum ConformanceText {
    /// Text longer than this many characters is shown as its start, "...", and its end.
    static let maxShownCharacters = 64

    /// `"text"`, with quotes, backslashes and control characters escaped, and every
    /// character outside printable ASCII as `\u{...}` (so `"e\u{301}"` and `"\u{E9}"` look
    /// different). Text longer than ``maxShownCharacters`` keeps its first 24 and last 32
    /// characters around `...`, followed by its byte count.
    static func quote(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count > maxShownCharacters else {
            return "\"" + escape(scalars[...]) + "\""
        }
        let head = escape(scalars[..<24])
        let tail = escape(scalars[(scalars.count - 32)...])
        return "\"" + head + "..." + tail + "\" (\(text.utf8.count) bytes)"
    }

    private static func escape(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var out = ""
        for scalar in scalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if (0x20...0x7E).contains(scalar.value) {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                }
            }
        }
        return out
    }

    /// A one-line account of an error: `storage.not_found ("no object under key ...")` for
    /// a ``PlugboardError``, the type and description for anything else.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PlugboardError {
            return "\(error.code) (\(error.message))"
        }
        let text = String(describing: error).split(separator: "\n").joined(separator: " ")
        return "\(type(of: error)): \(text)"
    }
}
