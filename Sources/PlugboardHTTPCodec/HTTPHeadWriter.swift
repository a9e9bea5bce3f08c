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
                for b in raw { bytes.append(Self.fieldText(b)) }
            }
        }
        if written == nil {
            for b in value.utf8 { bytes.append(Self.fieldText(b)) }
        }
        appendCRLF()
    }

    /// A byte of a value written with ``field(_:replacingControls:)``: itself when it is
    /// field text, else a space.
    @inline(__always)
    static func fieldText(_ b: UInt8) -> UInt8 { HTTPByte.isFieldValue(b) ? b : HTTPByte.space }

    /// Whether every byte is field text (``HTTPByte/isFieldValue(_:)``), eight bytes at a
    /// time: word arithmetic finds a word that may hold a byte below 0x20 or a DEL (it
    /// never misses one), and only such a word (a tab, say) is looked at byte by byte.
    /// Every value of every response header, and of every request header
    /// (``HTTPFieldLine/parse(_:_:)``), passes through here.
    @usableFromInline
    static func isFieldText(_ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = raw.baseAddress else { return true }
        let count = raw.count
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        guard count >= 8 else {
            for j in 0..<count where !HTTPByte.isFieldValue(base[j]) { return false }
            return true
        }
        // Whole words, the last one ending at the last byte (overlapping the one before it
        // when the count is not a multiple of eight): no byte-by-byte tail.
        var i = 0
        while true {
            let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let below = (word &- 0x20 &* ones) & ~word & highs
            let del = word ^ (0x7F &* ones)
            if below | ((del &- ones) & ~del & highs) != 0 {
                for j in i..<(i + 8) where !HTTPByte.isFieldValue(base[j]) { return false }
            }
            if i == count - 8 { return true }
            i = min(i + 8, count - 8)
        }
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
        let count = Self.digits(value)
        for _ in 0..<count { bytes.append(0x30) }
        let start = bytes.count - count
        bytes.withUnsafeMutableBufferPointer { Self.writeDigits(value, count, to: $0.baseAddress! + start) }
    }

    /// How many decimal digits a positive number has.
    @inline(__always)
    static func digits(_ value: Int) -> Int {
        var count = 0
        var n = value
        while n > 0 {
            count += 1
            n /= 10
        }
        return count
    }

    /// The `count` digits of a positive number, written from the last.
    @inline(__always)
    static func writeDigits(_ value: Int, _ count: Int, to start: UnsafeMutablePointer<UInt8>) {
        var i = count - 1
        var n = value
        while n > 0 {
            start[i] = UInt8(truncatingIfNeeded: 0x30 + n % 10)
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

extension HTTPHeadWriter {
    /// A head written into memory its caller made room for, with the same pieces as
    /// ``HTTPHeadWriter`` writes and the same rules, each piece one copy: an array's
    /// `append(contentsOf:)` for each of an answer's pieces made writing the head a large
    /// share of a small GET (docs/BENCHMARKS.md, "Request heads as bytes"). A piece that
    /// does not fit is not written, and nothing after it: ``overflowed`` says the caller
    /// must make room (the sizes are here) and write again.
    public struct InPlace {
        private var next: UnsafeMutablePointer<UInt8>
        private let limit: UnsafeMutablePointer<UInt8>
        /// A piece did not fit: what was written is incomplete.
        public private(set) var overflowed = false

        public init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
            next = buffer.baseAddress ?? UnsafeMutablePointer(bitPattern: 1)!
            limit = next + buffer.count
        }

        /// How many bytes have been written.
        public func written(since start: UnsafeMutableBufferPointer<UInt8>) -> Int {
            start.baseAddress.map { next - $0 } ?? 0
        }

        /// `HTTP/1.x SP status SP reason CRLF`, ``statusLineSize(status:reason:)`` bytes.
        public mutating func statusLine(minorVersion: Int, status: Int, reason: String) {
            copy(minorVersion == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
            decimal(status)
            byte(HTTPByte.space)
            copy(reason)
            crlf()
        }

        public static func statusLineSize(status: Int, reason: String) -> Int {
            9 + decimalSize(status) + 1 + reason.utf8.count + 2
        }

        /// `name: value CRLF` with the value's controls written as spaces, as
        /// ``HTTPHeadWriter/field(_:replacingControls:)`` writes it; ``fieldSize(_:_:)`` bytes.
        public mutating func field(_ name: String, replacingControls value: String) {
            fieldName(name)
            let copied: Void? = value.utf8.withContiguousStorageIfAvailable { raw in
                guard room(raw.count) else { return }
                if HTTPHeadWriter.isFieldText(raw) {
                    if let base = raw.baseAddress { next.initialize(from: base, count: raw.count) }
                    next += raw.count
                } else {
                    for b in raw {
                        next.pointee = HTTPHeadWriter.fieldText(b)
                        next += 1
                    }
                }
            }
            if copied == nil {
                for b in value.utf8 { byte(HTTPHeadWriter.fieldText(b)) }
            }
            crlf()
        }

        public static func fieldSize(_ name: String, _ value: String) -> Int {
            name.utf8.count + 2 + value.utf8.count + 2
        }

        /// `name: decimal CRLF`; ``fieldSize(_:decimal:)`` bytes.
        public mutating func field(_ name: String, decimal value: Int) {
            fieldName(name)
            decimal(value)
            crlf()
        }

        public static func fieldSize(_ name: String, decimal value: Int) -> Int {
            name.utf8.count + 2 + decimalSize(value) + 2
        }

        /// The empty line that ends the head; ``endSize`` bytes.
        public mutating func end() { crlf() }

        public static let endSize = 2

        /// Bytes after the head (a small body), as they are.
        public mutating func bytes(_ raw: UnsafeBufferPointer<UInt8>) {
            guard room(raw.count) else { return }
            if let base = raw.baseAddress { next.initialize(from: base, count: raw.count) }
            next += raw.count
        }

        private static func decimalSize(_ value: Int) -> Int {
            value > 0 ? HTTPHeadWriter.digits(value) : String(value).utf8.count
        }

        private mutating func decimal(_ value: Int) {
            guard value > 0 else {
                copy(String(value))
                return
            }
            let count = HTTPHeadWriter.digits(value)
            guard room(count) else { return }
            HTTPHeadWriter.writeDigits(value, count, to: next)
            next += count
        }

        private mutating func fieldName(_ name: String) {
            copy(name)
            guard room(2) else { return }
            next[0] = UInt8(ascii: ":")
            next[1] = HTTPByte.space
            next += 2
        }

        private mutating func crlf() {
            guard room(2) else { return }
            next[0] = HTTPByte.cr
            next[1] = HTTPByte.lf
            next += 2
        }

        private mutating func byte(_ b: UInt8) {
            guard room(1) else { return }
            next.pointee = b
            next += 1
        }

        private mutating func copy(_ text: String) {
            let copied: Void? = text.utf8.withContiguousStorageIfAvailable { raw in bytes(raw) }
            if copied == nil {
                for b in text.utf8 { byte(b) }
            }
        }

        /// Whether `count` more bytes fit, and none has failed to: never a write past the room.
        @inline(__always)
        private mutating func room(_ count: Int) -> Bool {
            if overflowed || limit - next < count {
                overflowed = true
                return false
            }
            return true
        }
    }
}
