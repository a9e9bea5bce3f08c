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
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a field line outside its buffer")
        // In one walk over the contiguous bytes: searching and checking slices of the array
        // checked every index, at every byte of every field of every request
        // (docs/BENCHMARKS.md, "Request heads as bytes").
        let (line, refused) = bytes.withUnsafeBufferPointer { scan($0, range) }
        guard let line else { throw refusal(refused) }
        return line
    }

    /// The line in `b[range]`, or nil and the first rule it breaks, in the order ``parse(_:_:)``
    /// tells them: empty, folded, no colon, a name that is not a token, a control in the value.
    @inlinable
    static func scan(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> (HTTPFieldLine?, HTTPSyntaxError.Kind) {
        let start = range.lowerBound, end = range.upperBound
        guard start < end else { return (nil, .emptyLine) }
        if HTTPByte.isWhitespace(b[start]) { return (nil, .obsoleteFolding) }
        var colon = start
        while colon < end && HTTPByte.isToken(b[colon]) { colon += 1 }
        guard colon < end, b[colon] == UInt8(ascii: ":"), colon > start else {
            // A colon further on has a name before it that is not a token.
            var i = colon
            while i < end && b[i] != UInt8(ascii: ":") { i += 1 }
            return (nil, i < end ? .invalidFieldName : .missingColon)
        }
        var lo = colon + 1, hi = end
        guard HTTPHeadWriter.isFieldText(UnsafeBufferPointer(rebasing: b[lo..<hi])) else { return (nil, .invalidFieldValue) }
        while lo < hi && HTTPByte.isWhitespace(b[lo]) { lo += 1 }
        while hi > lo && HTTPByte.isWhitespace(b[hi - 1]) { hi -= 1 }
        return (HTTPFieldLine(name: start..<colon, value: lo..<hi), .emptyLine)
    }

    @usableFromInline
    static func refusal(_ kind: HTTPSyntaxError.Kind) -> HTTPSyntaxError {
        switch kind {
        case .emptyLine:
            return HTTPSyntaxError(.emptyLine, "empty header line", expected: expected)
        case .obsoleteFolding:
            return HTTPSyntaxError(.obsoleteFolding, "obsolete line folding in a header field", expected: expected,
                                   detail: "A header line starts with whitespace (RFC 9112 section 5.2).",
                                   hint: "Send each field on one line.")
        case .missingColon:
            return HTTPSyntaxError(.missingColon, "header line without a colon", expected: expected)
        case .invalidFieldName:
            return HTTPSyntaxError(.invalidFieldName, "invalid header field name", expected: expected,
                                   detail: "A field name is a token, with no whitespace before the colon.")
        default:
            return HTTPSyntaxError(.invalidFieldValue, "invalid byte in a header field value", expected: expected,
                                   detail: "Field values may not hold CR, LF, NUL or other control characters.")
        }
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
