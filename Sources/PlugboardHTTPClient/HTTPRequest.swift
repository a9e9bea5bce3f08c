/// One HTTP request as a plugin builds it, independent of the transport that sends it
/// (``PlainHTTPTransport``, ``URLSessionTransport``), so that the request logic can be
/// tested against a scripted transport.
public struct HTTPRequest: Sendable, Equatable {
    public enum Method: String, Sendable {
        case get = "GET", head = "HEAD", put = "PUT", delete = "DELETE", post = "POST"
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

    /// Whether the request carries a body, so that `Content-Length` is sent even when it
    /// is empty (PUT, POST).
    public var sendsBody: Bool { method == .put || method == .post || !body.isEmpty }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}
