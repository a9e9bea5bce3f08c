/// Text from bytes that are all ASCII, made without a generic validation: every request
/// turns its key's bytes into a string (the server from the path, FileStorage from a
/// stored header), and `String(validating:as:)` is not specialized for them, costing
/// generic metadata lookups each time. ASCII is valid UTF-8 as it is, so the caller's
/// other keys (non-ASCII, or invalid) take the checked way.
public enum ASCIIText {
    /// The string the bytes spell when every one is below 0x80, else nil.
    public static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var high: UInt8 = 0
        for b in bytes { high |= b }
        guard high < 0x80 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension ASCIIText {
    /// `text` without its leading and trailing spaces and tabs (HTTP's optional white
    /// space), found by byte rather than by character.
    public static func trimmed(_ text: Substring) -> Substring {
        let utf8 = text.utf8
        guard let first = utf8.firstIndex(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }),
              let last = utf8.lastIndex(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return "" }
        return text[first..<utf8.index(after: last)]
    }

    /// ``trimmed(_:)`` of a whole string.
    public static func trimmed(_ text: String) -> String { String(trimmed(text[...])) }
}

extension Unicode.Scalar {
    /// True for `A`-`Z` and `a`-`z`: the letters a JSON path's identifier and a `${VAR}`
    /// name may start with.
    public var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
