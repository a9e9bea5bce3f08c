/// Writes a message head (a request or status line, fields, the empty line) into one byte
/// buffer, piece by piece: no string interpolation, which showed in the server's profile
/// at one head a response.
///
/// What is written is checked, because a CR or LF in a name or value would end the field
/// early and smuggle in another (header injection). A caller chooses what that costs:
/// ``field(_:_:)`` refuses the field (the client, whose fields come from its caller), and
/// ``field(_:replacingControls:)`` writes such bytes as spaces (the server, which must
/// answer even when a stored value holds one).
public struct HTTPHeadWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(reserving capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    private init() {}

    /// Writes a head through `write` at the end of `buffer`: into the caller's buffer,
    /// reserved once for the head and for what the caller puts after it (a small body),
    /// rather than into a buffer of the writer's own that the caller then copies or sends
    /// as a piece of its own.
    public static func append<E: Error>(to buffer: inout [UInt8],
                                        _ write: (inout HTTPHeadWriter) throws(E) -> Void) throws(E) {
        var writer = HTTPHeadWriter()
        // Swapped, not copied: the buffer stays uniquely referenced, so no write copies it.
        swap(&writer.bytes, &buffer)
        defer { swap(&writer.bytes, &buffer) }
        try write(&writer)
    }

    /// `METHOD SP target SP HTTP/1.1 CRLF`; a method that is not a token, or a target with
    /// a byte outside visible ASCII, is refused.
    public mutating func requestLine(method: String, target: String) throws(HTTPSyntaxError) {
        guard !method.isEmpty, Self.all(method, HTTPByte.isToken) else {
            throw Self.refusal("a request method is not a token", method, expected: "a request method that is a token")
        }
        guard !target.isEmpty, Self.all(target, { $0 > 0x20 && $0 < 0x7F }) else {
            throw Self.refusal("a request target holds a byte outside visible ASCII", target, expected: "a request target of visible ASCII")
        }
        append(method)
        bytes.append(HTTPByte.space)
        append(target)
        append(" HTTP/1.1\r\n")
    }

    /// `HTTP/1.x SP status SP reason CRLF`.
    public mutating func statusLine(minorVersion: Int, status: Int, reason: String) {
        append(minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        appendDecimal(status)
        bytes.append(HTTPByte.space)
        append(reason)
        appendCRLF()
    }

    /// `name: value CRLF`, refused when the name is not a token or the value holds a
    /// byte that is not field text.
    public mutating func field(_ name: String, _ value: String) throws(HTTPSyntaxError) {
        guard !name.isEmpty, Self.all(name, HTTPByte.isToken) else {
            throw Self.refusal("a header field name is not a token", name, expected: "a header field name that is a token")
        }
        guard Self.all(value, HTTPByte.isFieldValue) else {
            throw Self.refusal("a header field value holds a CR, LF or other control", value,
                               expected: "a header field value without CR, LF or other controls")
        }
        appendField(name, value)
    }

    /// `name: value CRLF` with every byte of `value` that is not field text written as a
    /// space. `name` is the caller's own constant.
    public mutating func field(_ name: String, replacingControls value: String) {
        appendName(name)
        let written: Void? = value.utf8.withContiguousStorageIfAvailable { raw in
            if Self.isFieldText(raw) {
                bytes.append(contentsOf: raw)
            } else {
                for b in raw { bytes.append(HTTPByte.isFieldValue(b) ? b : HTTPByte.space) }
            }
        }
        if written == nil {
            for b in value.utf8 { bytes.append(HTTPByte.isFieldValue(b) ? b : HTTPByte.space) }
        }
        appendCRLF()
    }

    /// Whether every byte is field text (``HTTPByte/isFieldValue(_:)``), eight bytes at a
    /// time: word arithmetic finds a word that may hold a byte below 0x20 or a DEL (it
    /// never misses one), and only such a word (a tab, say) is looked at byte by byte.
    /// Every value of every response header passes through here.
    static func isFieldText(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = raw.baseAddress else { return true }
        let count = raw.count
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= count {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let below = (word &- 0x20 &* ones) & ~word & highs
            let del = word ^ (0x7F &* ones)
            if below | ((del &- ones) & ~del & highs) != 0 {
                for j in i..<(i + 8) where !HTTPByte.isFieldValue(base[j]) { return false }
            }
            i += 8
        }
        while i < count {
            if !HTTPByte.isFieldValue(base[i]) { return false }
            i += 1
        }
        return true
    }

    /// `name: decimal CRLF`, without making a string of the number.
    public mutating func field(_ name: String, decimal value: Int) {
        appendName(name)
        appendDecimal(value)
        appendCRLF()
    }

    /// The empty line that ends the head; the buffer is complete after it.
    public mutating func end() {
        appendCRLF()
    }

    private mutating func appendField(_ name: String, _ value: String) {
        appendName(name)
        append(value)
        appendCRLF()
    }

    /// `name: `
    private mutating func appendName(_ name: String) {
        append(name)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(HTTPByte.space)
    }

    private mutating func appendCRLF() {
        bytes.append(HTTPByte.cr)
        bytes.append(HTTPByte.lf)
    }

    /// One copy of the string's contiguous bytes: the generic append of a `UTF8View`
    /// went through an iterator, for every field of every response (docs/BENCHMARKS.md,
    /// "Reads answered without a task"). Borrowed, not `withUTF8` on a copy, which
    /// retained and released every name and value.
    @inline(__always)
    private mutating func append(_ text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// Whether every byte of `text` passes `test`, over its contiguous storage: the generic
    /// `allSatisfy` over `String.UTF8View` goes byte by byte through an index and a call,
    /// and it ran for every field of every response (docs/BENCHMARKS.md, "Instructions a
    /// request").
    @inline(__always)
    private static func all(_ text: String, _ test: (UInt8) -> Bool) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { raw in
            for b in raw where !test(b) { return false }
            return true
        } ?? text.utf8.allSatisfy(test)
    }

    private mutating func appendDecimal(_ value: Int) {
        guard value > 0 else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        // Room for the digits first, then each written in place from the last: no array of
        // digits and no reversed slice (which copied, two allocations a response).
        var count = 0
        var n = value
        while n > 0 {
            count += 1
            n /= 10
        }
        for _ in 0..<count { bytes.append(0x30) }
        var i = bytes.count - 1
        n = value
        while n > 0 {
            bytes[i] = UInt8(truncatingIfNeeded: 0x30 + n % 10)
            n /= 10
            i -= 1
        }
    }

    /// The refusal of `found`, shown with its controls as `?` and cut at 40 characters.
    private static func refusal(_ what: String, _ found: String, expected: String) -> HTTPSyntaxError {
        let scalars = found.unicodeScalars
        let shown = String(scalars.prefix(40).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return HTTPSyntaxError(.invalidFieldForWriting, "\(what): \"\(shown)\(scalars.count > 40 ? "..." : "")\"", expected: expected)
    }
}
