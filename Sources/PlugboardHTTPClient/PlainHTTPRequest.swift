import Dispatch
import PlugboardConcurrency
import PlugboardHTTPCodec

/// One request as it goes on the wire: `target` is the encoded path and query, `hostHeader`
/// the Host header exactly as signed (with the port), `host` and `port` where to connect.
public struct PlainHTTPRequest: Sendable {
    public var method: String
    public var host: String
    public var port: Int
    public var hostHeader: String
    public var target: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Whether to send `Content-Length` even for an empty body (PUT, POST).
    public var sendsLength: Bool
    /// The `Content-Length` of a body sent after the head, in pieces
    /// (``PlainHTTPClient/upload(_:_:)``); `body` is then empty.
    public var declaredLength: Int?
    /// An uploaded body of unknown length: sent with `Transfer-Encoding: chunked`, each
    /// piece a chunk, the last chunk only once the body has ended (a body that fails
    /// leaves the message incomplete, and the server stores nothing).
    public var chunked = false
    /// Sends `Expect: 100-continue` with an uploaded body and waits (up to a second) for
    /// the server's word before sending it, so that a refusal (401, 413, a 503 while the
    /// server is not ready) comes before any of the body is read, and the request can be
    /// retried.
    public var expectsContinue = false

    public init(method: String, host: String, port: Int, hostHeader: String, target: String,
                headers: [(String, String)], body: [UInt8] = [], sendsLength: Bool, declaredLength: Int? = nil) {
        self.method = method
        self.host = host
        self.port = port
        self.hostHeader = hostHeader
        self.target = target
        self.headers = headers
        self.body = body
        self.sendsLength = sendsLength
        self.declaredLength = declaredLength
    }
}
