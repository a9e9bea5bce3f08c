/// The two numbers that frame a message body: a Content-Length and a chunk size. Both are
/// read digit by digit with overflow checks, never by `Int(_:radix:)`, which also takes a
/// sign ("-6" was once a negative count that trapped a reader).
public enum HTTPNumber {
    /// `1*DIGIT` (RFC 9110 section 8.6): no sign, no list, no whitespace; at most `limit`.
    /// A number over `limit`, or over `Int.max`, is `.numberTooLarge`.
    @inlinable
    public static func contentLength<Bytes: Collection<UInt8>>(_ digits: Bytes, limit: Int = .max) throws(HTTPSyntaxError) -> Int {
        guard !digits.isEmpty, digits.allSatisfy(HTTPByte.isDigit) else {
            throw HTTPSyntaxError(.invalidNumber, "invalid Content-Length", expected: "a Content-Length of decimal digits",
                                  detail: "Expected a decimal number of bytes.")
        }
        var value = 0
        for d in digits {
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int(d - 0x30))
            guard !o1, !o2, sum <= limit else {
                throw HTTPSyntaxError(.numberTooLarge, "Content-Length too large", expected: "a Content-Length of at most \(limit)")
            }
            value = sum
        }
        return value
    }

    /// The size at the start of a chunk's line (RFC 9112 section 7.1): hexadecimal digits
    /// (at most 15, so that no size overflows), optional whitespace, then nothing or `;` and
    /// extensions, which are ignored but must be ordinary field text.
    @inlinable
    public static func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPSyntaxError) -> Int {
        let expected = "a hexadecimal chunk size"
        var size = 0
        var digits = 0
        var i = line.startIndex
        while i < line.endIndex, let v = HTTPByte.hexValue(line[i]) {
            digits += 1
            guard digits <= 15 else { throw HTTPSyntaxError(.chunkSizeTooLarge, "chunk size too large", expected: expected) }
            size = size &* 16 &+ v  // 15 hex digits never overflow Int64
            i += 1
        }
        guard digits > 0 else {
            throw HTTPSyntaxError(.invalidChunkSize, "invalid chunk size", expected: expected, detail: "Expected hexadecimal digits.")
        }
        while i < line.endIndex, HTTPByte.isWhitespace(line[i]) { i += 1 }
        guard i == line.endIndex || line[i] == UInt8(ascii: ";") else {
            throw HTTPSyntaxError(.invalidChunkSize, "invalid chunk size", expected: expected,
                                  detail: "Expected hexadecimal digits, then ; or CRLF.")
        }
        guard line[i...].allSatisfy(HTTPByte.isFieldValue) else {
            throw HTTPSyntaxError(.invalidChunkExtension, "invalid byte in a chunk extension", expected: expected)
        }
        return size
    }
}
