/// One HTTP request as RESTStorage builds it, independent of the client library, so that
/// the request logic can be tested against a scripted transport.
public struct HTTPRequest: Sendable, Equatable {
    public enum Method: String, Sendable {
        case get = "GET", head = "HEAD", put = "PUT", delete = "DELETE"
    }

    public var method: Method
    /// The absolute URL, already percent-encoded.
    public var url: String
    /// Header fields in the order they are sent; names as written.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: Method, url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (any case), or nil.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// One HTTP response: the status, the header fields by lower-cased name, the body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Header fields keyed by their lower-cased name.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The value of the header `name` (any case) with optional whitespace trimmed, or nil.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()].map(HTTPText.trimmingOptionalWhitespace)
    }
}

/// Why a request got no HTTP response at all.
public struct TransportFailure: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Nothing answered: connection refused, host unreachable, DNS failure, the
        /// connection dropped before a response. Worth retrying.
        case cannotConnect
        /// The server took longer than the configured timeout. Worth retrying.
        case timedOut
        /// The storage was stopped (its plugin unloaded or replaced) and sends nothing
        /// more. Not retried: only a storage resolved anew can help.
        case stopped
        /// Anything else the client library reports (TLS failure, a malformed response,
        /// a refused redirect). Not retried.
        case other
    }

    public var kind: Kind
    /// What the client library said, without the request's headers (which may hold the token).
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// Sends one request and returns its response; throws ``TransportFailure`` when no
/// response came, or `CancellationError` when the calling task was cancelled.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

enum HTTPText {
    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    static func trimmingOptionalWhitespace(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
