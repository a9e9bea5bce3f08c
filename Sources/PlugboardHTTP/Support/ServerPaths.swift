/// Absolute file system paths in error texts, which both front ends take out of what a
/// client is answered (the native API's error bodies, the S3 API's messages).
public enum ServerPaths {
    public static let placeholder = "<server path>"

    /// `text` with every absolute path replaced by ``placeholder``. A path starts with `/`
    /// at the start of the text or after a space, quote, `(`, `[`, `=` or `,` (so the
    /// path of a URL, after its host, and a key such as `a/b` stay). A quoted path runs to
    /// its closing quote, spaces and escapes included (how ``PlugboardError/quoted(_:maxCharacters:)``
    /// writes it); an unquoted one to the next space or closing punctuation, a sentence's
    /// final `.` or `:` left out.
    public static func scrubbed(_ text: String) -> String {
        let b = Array(text.utf8)
        guard b.contains(slash) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            let previous: UInt8? = i > 0 ? b[i - 1] : nil
            guard b[i] == slash, previous.map(startsAfter.contains) ?? true,
                  i + 1 < b.count, !endsUnquoted.contains(b[i + 1]) else {
                out.append(b[i])
                i += 1
                continue
            }
            var end = i + 1
            if previous == quote {
                while end < b.count && b[end] != quote { end += b[end] == backslash ? 2 : 1 }
                end = min(end, b.count)
            } else {
                while end < b.count && !endsUnquoted.contains(b[end]) { end += 1 }
                while end > i + 1 && trailing.contains(b[end - 1]) { end -= 1 }
            }
            out.append(contentsOf: placeholder.utf8)
            i = end
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let slash = UInt8(ascii: "/"), quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let startsAfter = Set(" \t\n\"'([=,".utf8)
    private static let endsUnquoted = Set(" \t\n\"'),;]".utf8)
    private static let trailing = Set(".:".utf8)
}
