/// Percent-encoding (RFC 3986 section 2.1): every byte as `%XX` with upper-case hex,
/// except the unreserved `A-Z a-z 0-9 - . _ ~`. The HTTP API (server and RESTStorage)
/// encodes `.` as well, on purpose: a key is sent as one path segment, and no client or
/// proxy may fold `.` or `..` away. S3 keeps `.` (SigV4's `UriEncode`) and keeps `/` in
/// paths by encoding each segment apart.
public enum PercentEncoding {
    public static func encode(_ text: String, encodingDots: Bool = false) -> String {
        encode(text.utf8, encodingDots: encodingDots)
    }

    public static func encode(_ bytes: some Collection<UInt8>, encodingDots: Bool = false) -> String {
        // Written straight into the string's storage: the server encodes a key for every
        // object answer.
        String(unsafeUninitializedCapacity: bytes.count * 3) { buffer in
            var n = 0
            for byte in bytes {
                if isUnreserved(byte) && !(encodingDots && byte == UInt8(ascii: ".")) {
                    buffer[n] = byte
                    n += 1
                } else {
                    buffer[n] = UInt8(ascii: "%")
                    buffer[n + 1] = hex[Int(byte >> 4)]
                    buffer[n + 2] = hex[Int(byte & 0x0F)]
                    n += 3
                }
            }
            return n
        }
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

    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
}
