import PlugboardAPI

/// How the test kit shows keys, values and errors in one line of a report.
enum ConformanceText {
    /// The longest text, in characters, shown before it is cut.
    static let maxShownCharacters = 60

    /// `"text"`, with quotes, backslashes and control characters escaped Swift-style
    /// (so `"e\u{301}"` and `"\u{E9}"` look different) and long text cut, with its byte
    /// count.
    static func quote(_ text: String) -> String {
        var out = "\""
        var shown = 0
        var cut = false
        for scalar in text.unicodeScalars {
            if shown == maxShownCharacters {
                cut = true
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
                let value = scalar.value
                let isASCIIPrintable = (0x20...0x7E).contains(value)
                if isASCIIPrintable {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "\\u{" + String(value, radix: 16, uppercase: true) + "}"
                }
            }
        }
        out += "\""
        if cut { out += "... (\(text.utf8.count) bytes)" }
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
