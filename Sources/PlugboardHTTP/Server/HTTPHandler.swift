/// What the server asks of the application.
public protocol HTTPHandler: Sendable {
    /// Looks at a request before its body is read and answers it at once when it will be
    /// refused anyway (unknown route, wrong method, missing token): the server does not
    /// take in a body, up to the body limit, only to refuse it. Nil lets the request in.
    func screen(_ head: RequestHead) -> HTTPResponse?
    /// Answers a request whose head has arrived; its body arrives as the handler reads it
    /// (`request.body`). Runs as a Swift task; it must not block its thread.
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// Takes a request without a body on the event loop's thread, as it arrives: screens
    /// it (the request is not screened yet: ``screen(_:)``'s refusals are answered here),
    /// then answers at once when nothing has to wait (a small object read from memory or
    /// the kernel's cache), or hands on as a task the rest of the work, with what it has
    /// resolved already (``ImmediateAnswer/later(_:)``), or leaves the whole request to
    /// ``respond(to:)`` (``ImmediateAnswer/none``), which then gets it screened. It must
    /// not block: it delays every other connection of its loop. The default screens and
    /// answers nothing else at once.
    func respondWithoutWaiting(to request: HTTPRequest) -> ImmediateAnswer
    /// Answers a request the server refused before it was complete (`head` is nil when
    /// even the head could not be read) or a connection over the limit.
    func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse
    /// Called after each response is written, for access logs and metrics.
    func completed(_ exchange: Exchange)
}

extension HTTPHandler {
    public func respondWithoutWaiting(to request: HTTPRequest) -> ImmediateAnswer {
        screen(request.head).map(ImmediateAnswer.answer) ?? .none
    }
}

/// What ``HTTPHandler/respondWithoutWaiting(to:)`` made of a request: one request path
/// whether it ends on the loop's thread or in a task, so that what the handler resolved
/// (route, key, lease, storage) is resolved once.
public enum ImmediateAnswer: Sendable {
    /// The answer, made on the loop's thread.
    case answer(HTTPResponse)
    /// The rest of the answer, which has to wait: run as a task.
    case later(@Sendable () async -> HTTPResponse)
    /// Nothing done: ``HTTPHandler/respond(to:)`` answers the (now screened) request as a task.
    case none
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
