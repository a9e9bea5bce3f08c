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
