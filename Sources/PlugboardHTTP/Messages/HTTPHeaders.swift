import PlugboardHTTPCodec

/// Header fields in arrival order. A parsed request's fields stay in the bytes they
/// arrived as: the header section is copied once, each field is where its name and value
/// lie in that copy (an ``HTTPFieldLine``), and a value becomes a `String` only when it is
/// asked for. A `String` for every name and value of every request was most of what
/// reading a head cost (docs/BENCHMARKS.md, "Request heads as bytes"), and a request asks
/// for few of them.
///
/// Names are looked up without regard to ASCII case, and ``fields`` gives them in lower case.
public struct HTTPHeaders: Sendable {
    /// What the fields' ranges point into.
    private let bytes: [UInt8]
    private let lines: [HTTPFieldLine]
    /// One bit per name length present (``bit(_:)``): a request's head is asked for a
    /// dozen names that are mostly not there (conditions, ranges, codings), and a clear
    /// bit answers "absent" without walking the fields. A set one may be another name's
    /// of the same length, so the walk still decides.
    private let present: UInt64

    /// Fields whose ranges lie in `bytes`, already held to the field grammar.
    init(bytes: [UInt8], lines: [HTTPFieldLine]) {
        self.bytes = bytes
        self.lines = lines
        var mask: UInt64 = 0
        for line in lines { mask |= Self.bit(line.name.count) }
        present = mask
    }

    /// Fields as given (names in any case), copied into one buffer as a parsed head's are.
    public init(_ fields: [(name: String, value: String)] = []) {
        var bytes: [UInt8] = []
        var lines: [HTTPFieldLine] = []
        lines.reserveCapacity(fields.count)
        for field in fields {
            let name = bytes.count
            bytes.append(contentsOf: field.name.utf8)
            let value = bytes.count
            bytes.append(contentsOf: field.value.utf8)
            lines.append(HTTPFieldLine(name: name..<value, value: value..<bytes.count))
        }
        self.init(bytes: bytes, lines: lines)
    }

    /// Every field, in order: names in ASCII lower case, values as sent (without the
    /// whitespace around them).
    public var fields: [(name: String, value: String)] {
        lines.map { (name: $0.lowercasedName(in: bytes), value: $0.value(in: bytes)) }
    }

    public var count: Int { lines.count }

    /// The first value of `name`.
    public subscript(_ name: String) -> String? {
        var found: String?
        visit(name) { line in
            found = line.value(in: bytes)
            return false
        }
        return found
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        var found: [String] = []
        visit(name) { line in
            found.append(line.value(in: bytes))
            return true
        }
        return found
    }

    /// How many fields are named `name`.
    public func count(of name: String) -> Int {
        var n = 0
        visit(name) { _ in
            n += 1
            return true
        }
        return n
    }

    /// Calls `body` with each field named `name`, in order, while it returns true.
    @inline(__always)
    private func visit(_ name: String, _ body: (HTTPFieldLine) -> Bool) {
        guard present & Self.bit(name.utf8.count) != 0 else { return }
        if name.utf8.withContiguousStorageIfAvailable({ visit($0, body) }) == nil {
            Array(name.utf8).withUnsafeBufferPointer { visit($0, body) }
        }
    }

    /// The walk over borrowed buffers: iterating `lines` itself, or capturing both arrays
    /// in a closure, retained and released them at every lookup.
    @inline(__always)
    private func visit(_ key: UnsafeBufferPointer<UInt8>, _ body: (HTTPFieldLine) -> Bool) {
        bytes.withUnsafeBufferPointer { all in
            lines.withUnsafeBufferPointer { lines in
                for line in lines where line.hasName(key, in: all) {
                    guard body(line) else { return }
                }
            }
        }
    }

    /// A name's bit, from its length alone: reading even its first byte through the
    /// string's view cost more than the walk it spares.
    @inline(__always)
    private static func bit(_ length: Int) -> UInt64 {
        1 << UInt64(truncatingIfNeeded: length & 63)
    }
}
