import PlugboardAPI

extension JSONParser {
    /// Reads a number starting at `index` (a `-` or a digit).
    mutating func parseNumber() throws(PlugboardError) -> JSONValue.Kind {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, isDigit(first) else {
            throw syntaxError(at: index, "expected a digit after '-', found \(found(at: index))",
                              detail: "JSON numbers are written in decimal digits; Infinity and NaN are not JSON.")
        }
        index += 1
        if first == UInt8(ascii: "0"), let next = peek, isDigit(next) {
            skipDigits()
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            throw syntaxError(at: start, "invalid number\(inSecret ? "" : " '\(text)'"): leading zeros are not allowed",
                              detail: "A JSON number starts with 0 only when it is 0 or 0.something.",
                              hint: "Remove the leading zeros.")
        }
        skipDigits()
        var integral = true
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let d = peek, isDigit(d) else {
                throw syntaxError(at: index, "expected a digit after '.' in number, found \(found(at: index))",
                                  detail: "A JSON number has at least one digit after its decimal point.")
            }
            skipDigits()
            integral = false
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let d = peek, isDigit(d) else {
                throw syntaxError(at: index, "expected a digit in the number's exponent, found \(found(at: index))")
            }
            skipDigits()
            integral = false
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let exact = Int64(text) { return .integer(exact) }
        guard let value = Double(text), value.isFinite else {
            throw syntaxError(at: start, "number\(inSecret ? "" : " '\(Self.abbreviated(text))'") is out of range",
                              detail: "The largest magnitude a JSON number may have here is about 1.8e308.")
        }
        return .number(value)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let b = peek, isDigit(b) { index += 1 }
    }

    /// `text`, or its first and last characters when it is long.
    static func abbreviated(_ text: String) -> String {
        text.count <= 40 ? text : "\(text.prefix(20))...\(text.suffix(10))"
    }
}
