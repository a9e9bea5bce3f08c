#if canImport(Glibc)
import Glibc
#endif
import PlugboardBytes

/// Percent-decoding of request targets (RFC 3986 section 2.1), as the HTTP API defines
/// it: every `%XX` (either case) is a byte, `+` stays a plus, `/` stays a slash.
public enum PercentDecoding {
    /// The bytes `text` stands for; throws 400 `http.bad_request` for a `%` not followed
    /// by two hexadecimal digits.
    public static func decode(_ text: Substring) throws(HTTPError) -> [UInt8] {
        // A path without escapes (the usual key) is its own bytes: one copy, and a memchr
        // over the contiguous bytes rather than a walk of the view.
        var text = text
        let utf8 = text.withUTF8 { Array($0) }
        if utf8.withUnsafeBufferPointer({ $0.isEmpty || memchr($0.baseAddress!, 0x25, $0.count) == nil }) { return utf8 }
        guard let decoded = PercentEncoding.decode(utf8) else {
            throw HTTPError.badRequest("malformed percent escape in \"\(text.prefix(200))\"",
                                       detail: "A % must be followed by two hexadecimal digits.",
                                       hint: "Write a literal % as %25.")
        }
        return decoded
    }

    /// `name=value` pairs of a query, both decoded (a pair without `=` has an empty
    /// value); names and values that are not UTF-8 are refused with 400.
    public static func queryItems(_ query: Substring?) throws(HTTPError) -> [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        var items: [(name: String, value: String)] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: "=")
            let name = try utf8(decode(eq.map { pair[..<$0] } ?? pair[...]))
            let value = try utf8(decode(eq.map { pair[pair.index(after: $0)...] } ?? ""))
            items.append((name: name, value: value))
        }
        return items
    }

    private static func utf8(_ bytes: [UInt8]) throws(HTTPError) -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw HTTPError.badRequest("query parameter is not valid UTF-8 once decoded")
        }
        return s
    }
}
