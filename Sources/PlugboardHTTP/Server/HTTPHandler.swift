/// What the server asks of the application.
public protocol HTTPHandler: Sendable {
    /// Looks at a request before its body is read and answers it at once when it will be
    /// refused anyway (unknown route, wrong method, missing token): the server does not
    /// take in a body, up to the body limit, only to refuse it. Nil lets the request in.
    func screen(_ head: RequestHead) -> HTTPResponse?
    /// Answers a request whose head has arrived; its body arrives as the handler reads it
    /// (`request.body`). Runs as a Swift task; it must not block its thread.
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// Answers a request without a body at once, on the event loop's thread, when nothing
    /// has to wait (a small object read from memory or the kernel's cache); nil sends it
    /// to ``respond(to:)`` as a task. It must not block: it delays every other connection
    /// of its loop. The default answers nothing at once.
    func respondWithoutWaiting(to request: HTTPRequest) -> HTTPResponse?
    /// Answers a request the server refused before it was complete (`head` is nil when
    /// even the head could not be read) or a connection over the limit.
    func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse
    /// Called after each response is written, for access logs and metrics.
    func completed(_ exchange: Exchange)
}

extension HTTPHandler {
    public func respondWithoutWaiting(to request: HTTPRequest) -> HTTPResponse? { nil }
}

/// One request and its answer, as the access log and the metrics see it.
public struct Exchange: Sendable {
    public var method: String
    /// The request target, or `-` when it could not be read.
    public var target: String
    public var status: Int
    /// Body bytes sent.
    public var bytes: Int
    public var durationSeconds: Double
    public var peer: String
    /// The answer's ``HTTPResponse/label``; nil for an answer the server made itself (a
    /// refusal) or one the handler did not label.
    public var label: String? = nil
}
