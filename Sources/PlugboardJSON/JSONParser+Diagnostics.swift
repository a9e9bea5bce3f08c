import PlugboardAPI

extension JSONParser {
    /// A `manifest.syntax` error at `offset`: `source:line:column: message`.
    mutating func syntaxError(at offset: Int, _ message: String, detail: String? = nil,
                              hint: String? = nil) -> PlugboardError {
        let at = location(at: offset)
        return PlugboardError(.manifestSyntax, "\(source):\(at): \(message)", detail: detail, hint: hint)
    }

    /// What is at `offset`, for "found ..." in messages: `'}'`, `'True'`, `end of file`,
    /// `a tab`, `control character U+0001`, `'é' (U+00E9)`, `invalid UTF-8 byte 0xFF`;
    /// in a secret value, only structural characters are shown.
    func found(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of file" }
        let b = bytes[offset]
        if inSecret && !Array("{}[]:,\"\n\t ".utf8).contains(b) {
            return "a character that is not shown (the value is a secret)"
        }
        switch b {
        case UInt8(ascii: "\n"): return "a line break"
        case UInt8(ascii: "\t"): return "a tab"
        case UInt8(ascii: "'"): return "\"'\""
        case 0..<0x20, 0x7F: return "control character \(Self.scalarName(UInt32(b)))"
        case 0x80...:
            guard let length = utf8SequenceLength(at: offset) else { return "invalid UTF-8 byte 0x\(Self.hex2(b))" }
            let text = String(decoding: bytes[offset..<offset + length], as: UTF8.self)
            let value = text.unicodeScalars.first?.value ?? 0
            return "'\(text)' (\(Self.scalarName(value)))"
        default:
            guard isWordByte(at: offset) else { return "'\(Character(Unicode.Scalar(b)))'" }
            var end = offset
            while end < bytes.count, end - offset < 16, isWordByte(at: end) { end += 1 }
            return "'" + String(decoding: bytes[offset..<end], as: UTF8.self) + "'"
        }
    }

    /// The error for a byte that cannot start a value.
    mutating func unexpectedValueStart(at offset: Int) -> PlugboardError {
        guard offset < bytes.count else { return syntaxError(at: offset, "expected a value, found end of file") }
        let message = "expected a value, found \(found(at: offset))"
        switch bytes[offset] {
        case UInt8(ascii: "/"), UInt8(ascii: "#"):
            return syntaxError(at: offset, message, detail: "JSON does not allow comments.",
                               hint: "Remove the comment.")
        case UInt8(ascii: "'"):
            return syntaxError(at: offset, message, detail: "JSON strings are written in double quotes.",
                               hint: "Replace the single quotes with double quotes.")
        case UInt8(ascii: "+"), UInt8(ascii: "."):
            return syntaxError(at: offset, message,
                               detail: "A JSON number starts with a digit or '-', as in 0.5 or -1.")
        case 0x80...:
            if utf8SequenceLength(at: offset) == nil { return invalidUTF8(at: offset) }
            return syntaxError(at: offset, message)
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return syntaxError(at: offset, message,
                               detail: "A JSON string is written in double quotes; the literals are true, false and null.")
        default:
            return syntaxError(at: offset, message)
        }
    }

    /// The error for a byte where an object key was expected.
    mutating func unexpectedKeyStart(at offset: Int, afterComma: Bool) -> PlugboardError {
        let message = "expected a string as object key, found \(found(at: offset))"
        guard offset < bytes.count else { return syntaxError(at: offset, message) }
        switch bytes[offset] {
        case UInt8(ascii: "}") where afterComma:
            return syntaxError(at: offset, "expected a string as object key after ',', found '}'",
                               detail: "JSON does not allow a comma after the last member.",
                               hint: "Remove the trailing comma.")
        case UInt8(ascii: "'"):
            return syntaxError(at: offset, message, detail: "JSON strings are written in double quotes.",
                               hint: "Replace the single quotes with double quotes.")
        case UInt8(ascii: "/"), UInt8(ascii: "#"):
            return syntaxError(at: offset, message, detail: "JSON does not allow comments.",
                               hint: "Remove the comment.")
        case 0x80...:
            if utf8SequenceLength(at: offset) == nil { return invalidUTF8(at: offset) }
            return syntaxError(at: offset, message, detail: "Object keys are strings in double quotes.")
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"):
            return syntaxError(at: offset, message, detail: "Object keys are strings in double quotes.",
                               hint: "Put the key in double quotes.")
        default:
            return syntaxError(at: offset, message)
        }
    }
}
