import PlugboardAPI
import PlugboardHTTPCodec

/// A request the server refuses at the HTTP level: the status to answer with, and the
/// error (an `http.*` code) that becomes the JSON body.
public struct HTTPError: Error, Sendable {
    public var status: Int
    public var error: PlugboardError
    /// Extra response headers (`Allow`, `WWW-Authenticate`).
    public var headers: [(String, String)]

    public init(_ status: Int, _ error: PlugboardError, headers: [(String, String)] = []) {
        self.status = status
        self.error = error
        self.headers = headers
    }

    /// Whether the connection must be closed after the answer: the request's framing is
    /// unknown or untrusted, so the bytes that follow cannot be read as a next request.
    public var closesConnection: Bool { Self.isClosing(status) }

    static func make(_ status: Int, _ code: PlugboardError.Code, _ message: String,
                     detail: String? = nil, hint: String? = nil) -> HTTPError {
        HTTPError(status, PlugboardError(code, message, detail: detail, hint: hint))
    }

    public static func badRequest(_ message: String, detail: String? = nil,
                                  hint: String? = "Send a well-formed HTTP/1.1 request (RFC 9112).") -> HTTPError {
        make(400, .httpBadRequest, message, detail: detail, hint: hint)
    }

    /// A request that breaks the grammar the codec reads.
    static func badRequest(_ syntax: HTTPSyntaxError) -> HTTPError {
        syntax.hint.map { badRequest(syntax.summary, detail: syntax.detail, hint: $0) }
            ?? badRequest(syntax.summary, detail: syntax.detail)
    }

    public static func timeout(_ message: String, detail: String? = nil) -> HTTPError {
        make(408, .httpRequestTimeout, message, detail: detail,
             hint: "Send the whole request without pausing; the server does not wait for slow clients.")
    }

    public static func lengthRequired(_ method: String) -> HTTPError {
        make(411, .httpLengthRequired, "\(method) needs a Content-Length or Transfer-Encoding: chunked",
             detail: "The request has neither header, so its body cannot be framed.",
             hint: "Send Content-Length: <bytes> (0 for an empty body), or a chunked body.")
    }

    public static func payloadTooLarge(limit: Int, found: String) -> HTTPError {
        make(413, .httpPayloadTooLarge, "request body too large",
             detail: "The limit is \(limit) bytes; the request has \(found).",
             hint: "Send a smaller body, or start the server with a larger --max-body-bytes.")
    }

    public static func notImplemented(_ message: String, detail: String? = nil, hint: String? = nil) -> HTTPError {
        make(501, .httpNotImplemented, message, detail: detail, hint: hint)
    }
}

extension HTTPError {
    /// Whether the server closes the connection after an answer of `status` (the HTTP
    /// API's rule). A switch, not a set: it is asked of every answer.
    public static func isClosing(_ status: Int) -> Bool {
        switch status {
        case 400, 408, 411, 413, 414, 431, 501: return true
        default: return false
        }
    }
}
