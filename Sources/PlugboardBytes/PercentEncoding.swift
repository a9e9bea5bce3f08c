/// Percent-encoding (RFC 3986 section 2.1): every byte as `%XX` with upper-case hex,
/// except the unreserved `A-Z a-z 0-9 - . _ ~`. The HTTP API (server and RESTStorage)
/// encodes `.` as well, on purpose: a key is sent as one path segment, and no client or
/// proxy may fold `.` or `..` away. S3 keeps `.` (SigV4's `UriEncode`) and keeps `/` in
/// paths by encoding each segment apart.
public enum PercentEncoding {
    public static func encode(_ text: String, encodingDots: Bool = false) -> String {
        // Over the contiguous bytes: the generic walk of a `UTF8View` goes index by index.
        var text = text
        return text.withUTF8 { encode($0, encodingDots: encodingDots) }
    }

    public static func encode(_ bytes: some Collection<UInt8>, encodingDots: Bool = false) -> String {
        // Written straight into the string's storage, sized exactly: the server encodes a
        // key for every object answer, and a short result then stays a small string
        // (no allocation) instead of filling a buffer sized for the worst case.
        var escaped = 0
        for byte in bytes where !keeps(byte, encodingDots) { escaped += 1 }
        return String(unsafeUninitializedCapacity: bytes.count + 2 * escaped) { buffer in
            var n = 0
            for byte in bytes {
                if keeps(byte, encodingDots) {
                    buffer[n] = byte
                    n += 1
                } else {
                    buffer[n] = UInt8(ascii: "%")
                    buffer[n + 1] = hexDigit(byte >> 4)
                    buffer[n + 2] = hexDigit(byte & 0x0F)
                    n += 3
                }
            }
            return n
        }
    }

    @inline(__always)
    private static func keeps(_ byte: UInt8, _ encodingDots: Bool) -> Bool {
        isUnreserved(byte) && !(encodingDots && byte == UInt8(ascii: "."))
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
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
