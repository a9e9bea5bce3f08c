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

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { (name: $0.name.lowercased(), value: $0.value) }
    }

    mutating func append(name: String, value: String) { fields.append((name: name, value: value)) }

    mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// The first value of `name` (lower case).
    public subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of `name` (lower case), in order.
    public func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

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
    public var path: Substring {
        target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
    }

    /// The target's query, after the first `?`, or nil.
    public var query: Substring? {
        target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[target.index(after: $0)...] }
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
