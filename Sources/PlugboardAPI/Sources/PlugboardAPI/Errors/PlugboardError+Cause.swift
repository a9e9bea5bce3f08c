extension PlugboardError {
    /// How an error that wraps another tells its cause, in one form everywhere: the
    /// wrapper's detail gets "It threw CODE: MESSAGE." followed by the cause's own detail,
    /// and the cause's hint (what to do about the real problem) is offered as the hint.
    /// Each piece ends in exactly one period, and nothing is indented or put on a line of
    /// its own: a cause's `description`, with its DETAIL and HINT lines, pasted inside
    /// another error's detail came out garbled.
    static func cause(_ error: any Error) -> (detail: String, hint: String?) {
        guard let wrapped = error as? PlugboardError else {
            return ("It threw: \(sentence(String(describing: error)))", nil)
        }
        var detail = "It threw \(wrapped.code): \(sentence(wrapped.message))"
        if let inner = wrapped.detail { detail += " " + sentence(inner) }
        return (detail, wrapped.hint.map(sentence))
    }

    /// `text` on one line, ending in one period (or the question or exclamation mark it has).
    static func sentence(_ text: String) -> String {
        var scalars = Array(text.unicodeScalars.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        var out = String(String.UnicodeScalarView(scalars))
        if out.isEmpty { return out }
        if !(out.hasSuffix(".") || out.hasSuffix("?") || out.hasSuffix("!")) { out += "." }
        return out
    }
}
