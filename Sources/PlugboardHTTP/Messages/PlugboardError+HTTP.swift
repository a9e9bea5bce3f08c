import PlugboardAPI

extension PlugboardError.Code {
    // The HTTP server's own refusals; docs/ERRORS.md lists them in its `http` section.
    /// The request is not well-formed HTTP/1.1, or breaks a framing rule.
    public static let httpBadRequest: Self = "http.bad_request"
    /// A bearer token is required and was missing or wrong.
    public static let httpUnauthorized: Self = "http.unauthorized"
    /// No route has this path.
    public static let httpNotFound: Self = "http.not_found"
    /// The route exists but not for this method.
    public static let httpMethodNotAllowed: Self = "http.method_not_allowed"
    /// The client was too slow to send its request.
    public static let httpRequestTimeout: Self = "http.request_timeout"
    /// A body-carrying method came without a length.
    public static let httpLengthRequired: Self = "http.length_required"
    /// The body is larger than the server takes.
    public static let httpPayloadTooLarge: Self = "http.payload_too_large"
    /// The request line or target is longer than the server takes.
    public static let httpURITooLong: Self = "http.uri_too_long"
    /// The header section is larger, or has more fields, than the server takes.
    public static let httpHeadersTooLarge: Self = "http.headers_too_large"
    /// A method or transfer coding the server does not implement.
    public static let httpNotImplemented: Self = "http.not_implemented"
    /// The server failed while answering.
    public static let httpInternal: Self = "http.internal"
    /// The server cannot take the request now: too many connections, or shutting down.
    public static let httpUnavailable: Self = "http.unavailable"
    /// The server could not bind or listen on the address asked for.
    public static let httpListenFailed: Self = "http.listen_failed"
}
