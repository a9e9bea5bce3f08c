import PlugboardBytes

/// The byte classes of RFC 9110 and RFC 9112 that both directions check against: the
/// server's request decoder and the plain-HTTP client's response reader read one grammar.
public enum HTTPByte {
    public static let cr: UInt8 = 13
    public static let lf: UInt8 = 10
    public static let space: UInt8 = 32
    public static let tab: UInt8 = 9

    /// `tchar`: the characters of a token (method, header name, coding).
    /// Two 64-bit masks, not a table: a static array is reached through a lazy
    /// initializer's check at every byte of every method and header name.
    @inlinable public static func isToken(_ b: UInt8) -> Bool {
        b < 64 ? (tokenBelow64 >> UInt64(b)) & 1 != 0 : b < 128 && (tokenFrom64 >> UInt64(b - 64)) & 1 != 0
    }

    /// A byte allowed in a field value: VCHAR, SP, HTAB or obs-text; never CR, LF, NUL or
    /// another control.
    @inlinable public static func isFieldValue(_ b: UInt8) -> Bool { b == tab || (b >= 0x20 && b != 0x7F) }

    /// Space or tab: HTTP's optional whitespace.
    @inlinable public static func isWhitespace(_ b: UInt8) -> Bool { b == space || b == tab }

    @inlinable public static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// A byte allowed in an origin-form request target (visible ASCII; `#` starts a
    /// fragment, which a request never carries).
    @inlinable public static func isTarget(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F && b != UInt8(ascii: "#") }

    /// Bit n set when byte n (n < 64), or byte 64 + n, is a `tchar`: DIGIT, ALPHA and
    /// ``!#$%&'*+-.^_`|~`` (RFC 9110 section 5.6.2).
    @usableFromInline static let tokenBelow64: UInt64 = 0x03FF_6CFA_0000_0000
    @usableFromInline static let tokenFrom64: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    /// The value of a hexadecimal digit, or nil.
    @inlinable public static func hexValue(_ b: UInt8) -> Int? {
        HexDigits.value(b).map(Int.init)
    }

    /// ASCII lower case of a byte.
    @inlinable public static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b + 32 : b }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    public func trimmingOWS() -> String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}
