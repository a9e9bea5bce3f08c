import PlugboardAPI
import PlugboardBytes

extension JSONParser {
    /// Reads a string whose opening quote is at `index`, leaving `index` after the
    /// closing quote.
    mutating func parseString() throws(PlugboardError) -> String {
        let open = index
        index += 1
        var buffer: [UInt8] = []
        while true {
            guard index < bytes.count else {
                let at = location(at: open)
                throw syntaxError(at: index, "expected '\"' to close the string started at \(at), found end of file",
                                  hint: "Close the string with '\"'.")
            }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try appendEscape(to: &buffer)
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                let at = location(at: open)
                throw syntaxError(at: index, "unescaped line break in string",
                                  detail: "The string started at \(at) is not closed on its line; a JSON string cannot span lines.",
                                  hint: "Close the string with '\"', or write \\n for a line break.")
            case 0..<0x20:
                throw syntaxError(at: index, "unescaped control character \(Self.scalarName(UInt32(b))) in string",
                                  detail: "JSON strings must write control characters (U+0000 to U+001F) as escapes.",
                                  hint: b == 0x09 ? "Write \\t for a tab." : "Write the character as \\u\(Self.hex4(UInt32(b))).")
            case 0..<0x80:
                buffer.append(b)
                index += 1
            default:
                guard let length = utf8SequenceLength(at: index) else { throw invalidUTF8(at: index) }
                buffer.append(contentsOf: bytes[index..<index + length])
                index += length
            }
        }
    }

    /// Reads an escape whose backslash is at `index`.
    private mutating func appendEscape(to buffer: inout [UInt8]) throws(PlugboardError) {
        let start = index
        guard index + 1 < bytes.count else {
            throw syntaxError(at: index + 1, "expected an escape character after '\\', found end of file")
        }
        let c = bytes[index + 1]
        let simple: UInt8?
        switch c {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): simple = nil
        default:
            throw syntaxError(at: start, "invalid escape sequence '\\' followed by \(found(at: index + 1)) in string",
                              detail: "JSON's escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX.",
                              hint: "Write a backslash itself as \\\\.")
        }
        if let simple {
            buffer.append(simple)
            index += 2
            return
        }
        let first = try hexQuad(at: start)
        var scalar = first
        if (0xD800...0xDBFF).contains(first) {
            // A high surrogate must be followed by an escaped low surrogate.
            let next = start + 6
            let pairs = next + 1 < bytes.count && bytes[next] == UInt8(ascii: "\\") && bytes[next + 1] == UInt8(ascii: "u")
            guard pairs else { throw loneSurrogate(first, at: start) }
            let second = try hexQuad(at: next)
            guard (0xDC00...0xDFFF).contains(second) else { throw loneSurrogate(first, at: start) }
            scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            index = next + 6
        } else if (0xDC00...0xDFFF).contains(first) {
            throw loneSurrogate(first, at: start)
        } else {
            index = start + 6
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw loneSurrogate(first, at: start) }
        UTF8.encode(unicode) { buffer.append($0) }
    }

    /// The value of the four hex digits after the `\u` at `start`.
    private mutating func hexQuad(at start: Int) throws(PlugboardError) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 {
            let at = start + 2 + k
            guard at < bytes.count, let digit = HexDigits.value(bytes[at]) else {
                throw syntaxError(at: at, "expected four hex digits after '\\u', found \(found(at: at))",
                                  detail: "A \\u escape is written with exactly four hex digits, as in \\u00e9.")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func loneSurrogate(_ value: UInt32, at offset: Int) -> PlugboardError {
        syntaxError(at: offset, inSecret ? "lone surrogate in string" : "lone surrogate \\u\(Self.hex4(value)) in string",
                    detail: "A high surrogate (\\uD800 to \\uDBFF) must be followed by a low surrogate (\\uDC00 to \\uDFFF), and a low surrogate cannot stand alone.",
                    hint: "Write the character itself, or its complete surrogate pair.")
    }

    /// The length of the valid UTF-8 sequence starting at `offset`, or nil when the
    /// bytes there are not valid UTF-8 (Unicode's table 3-7: no overlong forms, no
    /// surrogates, nothing above U+10FFFF, no truncation).
    func utf8SequenceLength(at offset: Int) -> Int? {
        let b0 = bytes[offset]
        func continuation(_ k: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            offset + k < bytes.count && range.contains(bytes[offset + k])
        }
        switch b0 {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: return continuation(1) ? 2 : nil
        case 0xE0: return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : nil
        case 0xED: return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : nil
        case 0xF0: return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : nil
        case 0xF4: return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : nil
        default: return nil
        }
    }

    mutating func invalidUTF8(at offset: Int) -> PlugboardError {
        let b = offset < bytes.count ? bytes[offset] : 0
        return syntaxError(at: offset, inSecret ? "invalid UTF-8 in a secret value" : "invalid UTF-8 byte 0x\(Self.hex2(b))",
                           detail: "The bytes at this position are not valid UTF-8 (a stray, truncated or overlong sequence).",
                           hint: "Save the manifest as UTF-8.")
    }

    static func hex2(_ b: UInt8) -> String {
        let s = String(b, radix: 16, uppercase: true)
        return s.count < 2 ? "0" + s : s
    }

    static func hex4(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    /// `U+000A`.
    static func scalarName(_ v: UInt32) -> String { "U+" + hex4(v) }
}
