/// Percent-encoding of object keys as the HTTP API writes them (the `X-Plugboard-Key`
/// header): every byte of the UTF-8 as `%XX` (upper-case hex) except the unreserved
/// `A-Z a-z 0-9 - _ ~`, so `.` and `/` are encoded too and the text is plain ASCII.
public enum PercentEncoding {
    public static func encode(_ text: String) -> String {
        // Written straight into the string's storage: this runs for every object answer.
        String(unsafeUninitializedCapacity: text.utf8.count * 3) { buffer in
            var n = 0
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    buffer[n] = byte
                    n += 1
                default:
                    buffer[n] = UInt8(ascii: "%")
                    buffer[n + 1] = hex[Int(byte >> 4)]
                    buffer[n + 2] = hex[Int(byte & 0x0F)]
                    n += 3
                }
            }
            return n
        }
    }

    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
}
