/// One `name: value` line of a header or trailer section, without its line end, as ranges
/// of the buffer it was read from: a field costs no `String` until it is asked for one.
public struct HTTPFieldLine: Sendable, Equatable {
    /// The name, as sent (a token).
    public var name: Range<Int>
    /// The value without the optional whitespace around it.
    public var value: Range<Int>

    /// Parses `bytes[range]` by RFC 9112 section 5: no obsolete line folding (a line that
    /// starts with whitespace), a token name with no whitespace before the colon, a value
    /// of field-value bytes only (no CR, LF, NUL or other control).
    @inlinable
    public static func parse(_ bytes: [UInt8], _ range: Range<Int>) throws(HTTPSyntaxError) -> HTTPFieldLine {
        guard let first = range.first.map({ bytes[$0] }) else {
            throw HTTPSyntaxError(.emptyLine, "empty header line", expected: expected)
        }
        if HTTPByte.isWhitespace(first) {
            throw HTTPSyntaxError(.obsoleteFolding, "obsolete line folding in a header field", expected: expected,
                                  detail: "A header line starts with whitespace (RFC 9112 section 5.2).",
                                  hint: "Send each field on one line.")
        }
        guard let colon = bytes[range].firstIndex(of: UInt8(ascii: ":")) else {
            throw HTTPSyntaxError(.missingColon, "header line without a colon", expected: expected)
        }
        guard colon > range.lowerBound, bytes[range.lowerBound..<colon].allSatisfy(HTTPByte.isToken) else {
            throw HTTPSyntaxError(.invalidFieldName, "invalid header field name", expected: expected,
                                  detail: "A field name is a token, with no whitespace before the colon.")
        }
        var lo = colon + 1, hi = range.upperBound
        guard bytes[lo..<hi].allSatisfy(HTTPByte.isFieldValue) else {
            throw HTTPSyntaxError(.invalidFieldValue, "invalid byte in a header field value", expected: expected,
                                  detail: "Field values may not hold CR, LF, NUL or other control characters.")
        }
        while lo < hi && HTTPByte.isWhitespace(bytes[lo]) { lo += 1 }
        while hi > lo && HTTPByte.isWhitespace(bytes[hi - 1]) { hi -= 1 }
        return HTTPFieldLine(name: range.lowerBound..<colon, value: lo..<hi)
    }

    @usableFromInline static let expected = "a \"Name: value\" header line"

    public init(name: Range<Int>, value: Range<Int>) {
        self.name = name
        self.value = value
    }

    /// The name in ASCII lower case, the form both sides look fields up by.
    @inlinable
    public func lowercasedName(in bytes: [UInt8]) -> String {
        // Written into the string's own storage: decoding a lazy map went byte by byte
        // through generic code, once for every field of every request.
        let name = self.name
        return bytes.withUnsafeBufferPointer { all in
            String(unsafeUninitializedCapacity: name.count) { out in
                var i = 0
                for j in name {
                    out[i] = HTTPByte.lower(all[j])
                    i += 1
                }
                return i
            }
        }
    }

    @inlinable
    public func value(in bytes: [UInt8]) -> String {
        String(decoding: bytes[value], as: UTF8.self)
    }

    /// Whether the name is `other`, ASCII letters compared without regard to case (field
    /// names are case-insensitive: RFC 9110 section 5.1). `bytes` holds the name's range.
    @inlinable
    public func hasName(_ other: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count == other.count else { return false }
        var j = name.lowerBound
        for b in other {
            guard HTTPByte.lower(bytes[j]) == HTTPByte.lower(b) else { return false }
            j += 1
        }
        return true
    }
}
