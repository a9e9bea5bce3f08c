/// Why one plain-HTTP exchange failed. ``PlainHTTPTransport`` hands it on as the cause of a
/// ``TransportFailure`` whose kind matches URLSession's for the same failure, so `http://`
/// and `https://` endpoints fail alike.
public enum PlainHTTPError: Error, Equatable, CustomStringConvertible {
    /// No byte for the configured timeout, while connecting, sending or receiving.
    case timedOut
    /// The name did not resolve or nobody accepted the connection.
    case cannotConnect(String)
    /// The connection broke, or the server closed it before the response was complete.
    case connectionLost(String)
    /// The server's bytes are not an HTTP/1.x response: what was expected, what was found.
    case badResponse(expected: String, found: String)
    /// The header block or the body is larger than this client accepts.
    case tooLarge(what: String, limit: Int, found: Int)
    /// The request cannot be written as HTTP/1.1 (a CR or LF in a header).
    case invalidRequest(String)
    /// The calling task was cancelled while the exchange ran.
    case cancelled

    public var description: String {
        switch self {
        case .timedOut: "no data before the timeout"
        case .cannotConnect(let why): "cannot connect: \(why)"
        case .connectionLost(let why): "connection lost: \(why)"
        case .badResponse(let expected, let found): "bad HTTP response: expected \(expected), found \(found)"
        case .tooLarge(let what, let limit, let found): "\(what) too large: expected at most \(limit) bytes, found \(found)"
        case .invalidRequest(let why): "cannot send the request: \(why)"
        case .cancelled: "cancelled"
        }
    }
}
