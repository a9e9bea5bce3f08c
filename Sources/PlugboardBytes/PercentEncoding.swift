/// Percent-encoding (RFC 3986 section 2.1), and its decoding: every byte as `%XX` with
/// upper-case hex, except the unreserved `A-Z a-z 0-9 - . _ ~`. The HTTP API (server and RESTStorage)
/// encodes `.` as well, on purpose: a key is sent as one path segment, and no client or
/// proxy may fold `.` or `..` away. S3 keeps `.` (SigV4's `UriEncode`) and keeps `/` in
/// paths by encoding each segment apart.
public enum PercentEncoding {
    public static func encode(_ text: String, encodingDots: Bool = false, keepingSlashes: Bool = false,
                              spaceAsPlus: Bool = false) -> String {
        // Over the contiguous bytes: the generic walk of a `UTF8View` goes index by index.
        var text = text
        return text.withUTF8 { encode($0, encodingDots: encodingDots, keepingSlashes: keepingSlashes, spaceAsPlus: spaceAsPlus) }
    }

    /// `keepingSlashes` keeps `/` as it is (a path's segments, S3's listing keys);
    /// `spaceAsPlus` writes a space as `+`, as S3's `encoding-type=url` does.
    public static func encode(_ bytes: some Collection<UInt8>, encodingDots: Bool = false, keepingSlashes: Bool = false,
                              spaceAsPlus: Bool = false) -> String {
        // Written straight into the string's storage, sized exactly: the server encodes a
        // key for every object answer, and a short result then stays a small string
        // (no allocation) instead of filling a buffer sized for the worst case.
        let space = spaceAsPlus ? UInt8(ascii: " ") : nil
        var escaped = 0
        for byte in bytes where !keeps(byte, encodingDots, keepingSlashes) && byte != space { escaped += 1 }
        return String(unsafeUninitializedCapacity: bytes.count + 2 * escaped) { buffer in
            var n = 0
            for byte in bytes {
                if keeps(byte, encodingDots, keepingSlashes) {
                    buffer[n] = byte
                    n += 1
                } else if byte == space {
                    buffer[n] = UInt8(ascii: "+")
                    n += 1
                } else {
                    buffer[n] = UInt8(ascii: "%")
                    buffer[n + 1] = HexDigits.upper(byte >> 4)
                    buffer[n + 2] = HexDigits.upper(byte & 0x0F)
                    n += 3
                }
            }
            return n
        }
    }

    /// The bytes `bytes` stand for: every `%XX` (either case) a byte, `+` a plus unless
    /// `plusAsSpace` (form encoding); nil for a `%` not followed by two hexadecimal digits.
    /// Inlinable so that each caller's collection is specialized: the generic iterator
    /// costs a witness-table call per byte.
    @inlinable
    public static func decode(_ bytes: some Collection<UInt8>, plusAsSpace: Bool = false) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(HexDigits.value),
                      let low = iterator.next().flatMap(HexDigits.value) else { return nil }
                out.append(high << 4 | low)
            } else {
                out.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return out
    }

    /// The text `text` stands for once decoded; nil for a malformed escape or bytes that
    /// are not UTF-8.
    public static func decodedText(_ text: some StringProtocol) -> String? {
        decode(text.utf8).flatMap { String(validating: $0, as: UTF8.self) }
    }

    @inline(__always)
    private static func keeps(_ byte: UInt8, _ encodingDots: Bool, _ keepingSlashes: Bool) -> Bool {
        (isUnreserved(byte) && !(encodingDots && byte == UInt8(ascii: "."))) || (keepingSlashes && byte == UInt8(ascii: "/"))
    }

    /// RFC 3986's unreserved characters.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
