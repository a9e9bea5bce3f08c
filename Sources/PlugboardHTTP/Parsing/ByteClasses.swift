/// The byte classes of RFC 9110 that the parser checks against.
enum ByteClass {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9

    /// `tchar`: the characters of a token (method, header name, coding).
    static func isToken(_ b: UInt8) -> Bool { tokenTable[Int(b)] }

    /// A byte allowed in a field value: VCHAR, SP, HTAB or obs-text; never CR, LF, NUL or
    /// another control.
    static func isFieldValue(_ b: UInt8) -> Bool { b == tab || (b >= 0x20 && b != 0x7F) }

    /// A byte allowed in an origin-form request target (visible ASCII; `#` starts a
    /// fragment, which a request never carries).
    static func isTarget(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F && b != UInt8(ascii: "#") }

    private static let tokenTable: [Bool] = (0...255).map { (b: Int) -> Bool in
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(UInt8(b))
        }
    }

    /// The value of a hexadecimal digit, or nil.
    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }

    /// ASCII lower case of a byte.
    static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b + 32 : b }
}
