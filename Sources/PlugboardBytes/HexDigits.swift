/// Hexadecimal digits: a digit's value (either case), a nibble's digit, and hex text's
/// bytes. What the percent-escapes, chunk sizes, JSON's `\u` escapes, ETags and digests
/// all read and write.
public enum HexDigits {
    /// The value of a hexadecimal digit of either case, or nil.
    @inlinable public static func value(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }

    /// The upper-case digit of `nibble` (0 to 15), as percent-encoding writes it.
    @inlinable public static func upper(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
    }

    /// The lower-case digit of `nibble` (0 to 15), as digests are shown.
    @inlinable public static func lower(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// Appends two lower-case digits per byte of `bytes` to `out`, as digests are shown.
    /// Inlinable so that each caller's sequence type is specialized.
    @inlinable public static func appendLower(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            out.append(lower(byte >> 4))
            out.append(lower(byte & 0x0F))
        }
    }

    /// The bytes of hex text of either case, two digits a byte; nil when it is not hex.
    public static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
