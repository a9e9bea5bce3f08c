/// Why a request got no HTTP response at all.
public struct TransportFailure: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Nothing answered: connection refused, host unreachable, DNS failure, the
        /// connection dropped before a response. Worth retrying.
        case cannotConnect
        /// The server took longer than the configured timeout. Worth retrying.
        case timedOut
        /// The transport was invalidated (its plugin's storage stopped) and sends nothing
        /// more. Not retried: only a storage resolved anew can help.
        case stopped
        /// Anything else the client library reports (TLS failure, a malformed response,
        /// a refused redirect). Not retried.
        case other
    }

    public var kind: Kind
    /// What the client library said, without the request's headers (which may hold a
    /// token or a signature).
    public var description: String
    /// The client library's own error (``PlainHTTPError``, or URLSession's `URLError`),
    /// for a caller whose messages tell more cases apart than ``kind`` does; nil when the
    /// transport itself refused (stopped, a URL it cannot send to).
    public var cause: (any Error & Sendable)?

    public init(_ kind: Kind, _ description: String, cause: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.description = description
        self.cause = cause
    }

    public static func == (lhs: TransportFailure, rhs: TransportFailure) -> Bool {
        lhs.kind == rhs.kind && lhs.description == rhs.description
    }
}

/// Sends one request and returns its response; throws ``TransportFailure`` when no
/// response came, or `CancellationError` when the calling task was cancelled.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}
