#if canImport(Glibc)
import Glibc
#endif
/// The protocol versions the server speaks.
public enum HTTPVersion: Sendable, Equatable, CustomStringConvertible {
    case http10, http11
    public var description: String { self == .http10 ? "HTTP/1.0" : "HTTP/1.1" }
}

/// How a request's body is delimited (RFC 9112 section 6.3).
public enum BodyFraming: Sendable, Equatable {
    /// No body.
    case none
    /// Exactly this many bytes.
    case length(Int)
    /// Chunked transfer coding.
    case chunked
}

/// Header fields in arrival order, names lower-cased.
public struct HTTPHeaders: Sendable {
    public private(set) var fields: [(name: String, value: String)] = []
    /// One bit per name present (``bit(_:)``): a request's head is asked for a dozen
    /// names that are mostly not there (conditions, ranges, codings), and each lookup
    /// walked every field comparing names. A clear bit answers "absent" at once; a set
    /// one may be another name's, so the walk still decides.
    private var present: UInt64 = 0

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { (name: $0.name.lowercased(), value: $0.value) }
        present = Self.mask(of: self.fields)
    }

    mutating func append(name: String, value: String) {
        fields.append((name: name, value: value))
        present |= Self.bit(name)
    }

    mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// The first value of `name` (lower case).
    public subscript(_ name: String) -> String? {
        guard present & Self.bit(name) != 0 else { return nil }
        for field in fields where Self.same(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name` (lower case), in order.
    public func values(_ name: String) -> [String] {
        // Looked up several times for every request, mostly for a name that is not there:
        // no array is made for none.
        guard present & Self.bit(name) != 0 else { return [] }
        var found: [String] = []
        for field in fields where Self.same(field.name, name) { found.append(field.value) }
        return found
    }

    /// How many fields have the name `name` (lower case).
    public func count(of name: String) -> Int {
        guard present & Self.bit(name) != 0 else { return 0 }
        var n = 0
        for field in fields where Self.same(field.name, name) { n += 1 }
        return n
    }

    /// A name's bit, from its length alone: reading even its first byte through the
    /// string's view cost more than the walk it spares.
    @inline(__always)
    static func bit(_ name: String) -> UInt64 {
        1 << UInt64(truncatingIfNeeded: name.utf8.count & 63)
    }

    private static func mask(of fields: [(name: String, value: String)]) -> UInt64 {
        var mask: UInt64 = 0
        for field in fields { mask |= bit(field.name) }
        return mask
    }

    /// Names compare by their bytes, as object keys do, and most differ in length already.
    /// (`String ==` compares by Unicode rules, which showed in the request's profile.) Not
    /// through ``ObjectKey/isSame(_:as:)``: across the API library's boundary that call is
    /// not inlined, and a request makes about ten lookups (docs/BENCHMARKS.md, "Instructions
    /// a request", has what it cost).
    @inline(__always)
    static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let equal = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
        }
        return equal.flatMap { $0 } ?? a.utf8.elementsEqual(b.utf8)
    }

    public var count: Int { fields.count }
}

/// A parsed request line and header section.
public struct RequestHead: Sendable {
    public var method: String
    /// The request target exactly as sent (origin form: path and query).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var framing: BodyFraming
    /// Whether the connection may carry another request after this one.
    public var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body.
    public var expectsContinue: Bool

    /// The target's path, before `?`.
    public var path: Substring { Self.path(of: target) }

    /// The target's query, after the first `?`, or nil.
    public var query: Substring? {
        Self.questionMark(in: target).map { target[target.utf8.index(after: $0)...] }
    }

    /// The path of a request target: what comes before its first `?`.
    public static func path(of target: String) -> Substring {
        questionMark(in: target).map { target[..<$0] } ?? target[...]
    }

    /// Where the first `?` is, found with `memchr` in the contiguous bytes: the generic
    /// `firstIndex(of:)` over the UTF-8 view walks index by index, several times a request.
    static func questionMark(in target: String) -> String.Index? {
        let offset = target.utf8.withContiguousStorageIfAvailable { raw -> Int? in
            guard let base = raw.baseAddress, let hit = memchr(base, Int32(UInt8(ascii: "?")), raw.count) else { return nil }
            return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
        } ?? target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target.utf8.distance(from: target.startIndex, to: $0) }
        return offset.map { target.utf8.index(target.startIndex, offsetBy: $0) }
    }
}

/// A request: its head, and its body as it arrives.
public struct HTTPRequest: Sendable {
    public var head: RequestHead
    public var body: RequestBody
    /// The server passed the head through ``HTTPHandler/screen(_:)``, which found nothing
    /// to refuse: the handler need not screen it again.
    public internal(set) var screened = false

    public init(head: RequestHead, body: RequestBody) {
        self.head = head
        self.body = body
    }

    init(head: RequestHead, body: RequestBody, screened: Bool) {
        self.init(head: head, body: body)
        self.screened = screened
    }

    public init(head: RequestHead, body: [UInt8]) {
        self.init(head: head, body: RequestBody(body))
    }

    public var method: String { head.method }
    public var headers: HTTPHeaders { head.headers }
}
