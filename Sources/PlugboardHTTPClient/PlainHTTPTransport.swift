import PlugboardConcurrency

/// ``HTTPTransport`` for `http://` URLs over ``PlainHTTPClient``, which also streams
/// bodies both ways: ``upload(_:length:expectsContinue:_:)`` sends a PUT's body as it is
/// read, and ``open(_:)`` leaves a 2xx answer's body on the connection for the caller to
/// read a piece at a time, so an object of any size passes through in pieces of 256 KiB.
///
/// URLSession on this toolchain takes a request body only whole (no bounded input stream)
/// and hands a response over only whole (its delegate has no backpressure), which is why
/// `https://` stays on ``URLSessionTransport`` with bodies in memory.
///
/// Like URLSessionTransport: redirects are returned as answers, never followed (a token
/// or a signed request goes only to the configured endpoint), and `timeoutSeconds` bounds
/// the connect and every wait for data, so a large transfer that keeps moving is not cut.
/// Its failures carry the client's ``PlainHTTPError`` as their ``TransportFailure/cause``.
public final class PlainHTTPTransport: HTTPTransport {
    private let client: PlainHTTPClient
    private let stopped = LockedValueBox(false)

    /// - Parameter maxIdlePerHost: Idle keep-alive connections kept for each host.
    public init(timeoutSeconds: Double, maxIdlePerHost: Int = 4) {
        client = PlainHTTPClient(timeoutSeconds: timeoutSeconds, maxIdlePerHost: maxIdlePerHost)
    }

    /// Closes the idle connections; later requests fail with
    /// ``TransportFailure/Kind/stopped``, as after ``URLSessionTransport/invalidate()``.
    public func invalidate() {
        stopped.withLock { $0 = true }
        client.shutdown()
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var wire = try wireRequest(request)
        wire.body = request.body
        let response = try await mapped { try await client.perform(wire) }
        return HTTPResponse(status: response.status, headers: response.headers, body: response.body)
    }

    /// Sends `request`'s head announcing `length` bytes (chunked when nil) on a new connection, lets `write`
    /// send the body piece by piece through the ``BodyWriter``, then reads the answer.
    ///
    /// When `write` throws, the connection closes with the body incomplete, and the server
    /// stores nothing; its error comes back unchanged. A server that answers before taking
    /// the whole body (a refusal) is heard: its answer is returned.
    ///
    /// - Parameter expectsContinue: Whether to wait for `100 Continue` before the body, so
    ///   that a refusal comes before any of the body is read and the upload can be retried.
    /// - Throws: ``TransportFailure``, what `write` throws, or `CancellationError`.
    public func upload(_ request: HTTPRequest, length: Int?, expectsContinue: Bool,
                       _ write: (BodyWriter) async throws -> Void) async throws -> HTTPResponse {
        var wire = try wireRequest(request)
        wire.declaredLength = length
        wire.chunked = length == nil
        wire.expectsContinue = expectsContinue
        let response = try await mapped {
            try await client.upload(wire) { upload in try await write(BodyWriter(upload: upload)) }
        }
        return HTTPResponse(status: response.status, headers: response.headers, body: response.body)
    }

    /// Sends `request` and reads the answer's head; a 2xx answer's body is left on the
    /// connection as ``ResponseBody``, every other answer is read whole (an error's body
    /// is small, and parsed whole).
    ///
    /// - Throws: ``TransportFailure`` or `CancellationError`.
    public func open(_ request: HTTPRequest) async throws -> (HTTPResponse, ResponseBody?) {
        let wire = try wireRequest(request)
        let opened = try await mapped { try await client.open(wire, streamingSuccess: true) }
        let response = HTTPResponse(status: opened.response.status, headers: opened.response.headers, body: opened.response.body)
        return (response, opened.body.map(ResponseBody.init))
    }

    /// Where one upload's body goes, a piece at a time.
    public struct BodyWriter: Sendable {
        fileprivate let upload: PlainHTTPUpload

        /// Sends `bytes`, the next piece of the body; returns when the socket took them.
        ///
        /// - Throws: the client's error, which ``PlainHTTPTransport/upload(_:length:expectsContinue:_:)``
        ///   turns into a ``TransportFailure`` (or the server's early answer).
        public func send(_ bytes: [UInt8]) async throws {
            try await upload.send(bytes)
        }
    }

    /// A 2xx answer's body, still on its connection. Dropping it before its end closes
    /// the connection (the rest of the body would still arrive on it).
    public struct ResponseBody: Sendable {
        fileprivate let body: PlainHTTPResponseBody

        /// The Content-Length the answer announced; nil for a chunked or close-delimited body.
        public var length: Int? { body.length }

        /// The body bytes that came off the connection so far.
        public var bytesReceived: Int { body.bytesReceived }

        /// The next piece of the body (at most 256 KiB), or nil after the last one.
        ///
        /// - Throws: ``TransportFailure`` (the connection broke, timed out, or framed the
        ///   body badly), or `CancellationError`.
        public func next() async throws -> [UInt8]? {
            try await PlainHTTPTransport.mapped { try await body.next() }
        }
    }

    /// The request as ``PlainHTTPClient`` sends it: where to connect (the URL's host, IPv6
    /// brackets removed, and port), the Host header (the URL's authority, as signed), the
    /// path and query; no body.
    private func wireRequest(_ request: HTTPRequest) throws(TransportFailure) -> PlainHTTPRequest {
        if stopped.withLock({ $0 }) {
            throw TransportFailure(.stopped, "the plugin's HTTP client was released when the storage was stopped")
        }
        guard let wire = Self.wireRequest(request) else {
            throw TransportFailure(.other, "the request URL \"\(request.url.prefix(120))\" is not a valid http:// URL")
        }
        return wire
    }

    /// `request` as ``PlainHTTPClient`` sends it, without its body; nil when its URL is
    /// not an absolute `http://` URL.
    public static func wireRequest(_ request: HTTPRequest) -> PlainHTTPRequest? {
        guard let address = address(request.url) else { return nil }
        return PlainHTTPRequest(method: request.method.rawValue, host: address.host, port: address.port,
                                hostHeader: address.authority, target: address.target,
                                headers: request.headers.map { ($0.name, $0.value) },
                                sendsLength: request.sendsBody)
    }

    /// The host to connect to (IPv6 brackets removed), its port (80 when none), the
    /// authority as the Host header carries it, and the path and query of an absolute
    /// `http://` URL; nil for anything else.
    static func address(_ url: String) -> (host: String, port: Int, authority: String, target: String)? {
        let scheme = "http://"
        guard url.utf8.count > scheme.utf8.count, url.prefix(scheme.count).lowercased() == scheme else { return nil }
        let rest = url.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" }
        let target = rest.dropFirst(authority.count)
        let host: Substring
        let port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            port = after.isEmpty ? nil : after.dropFirst()
        } else {
            let colon = authority.firstIndex(of: ":")
            host = colon.map { authority[..<$0] } ?? authority
            port = colon.map { authority[authority.index(after: $0)...] }
        }
        guard !host.isEmpty else { return nil }
        var number = 80
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy(\.isASCII), let parsed = Int(port),
                  (1...65535).contains(parsed) else { return nil }
            number = parsed
        }
        return (String(host), number, String(authority), target.isEmpty ? "/" : String(target))
    }

    private func mapped<T>(_ work: () async throws -> T) async throws -> T {
        try await Self.mapped(work)
    }

    /// Runs `work`, with the client's errors as ``TransportFailure``s (their text names
    /// the server and what broke, never a header, so the token cannot leak through it)
    /// and its cancellation as `CancellationError`; any other error passes unchanged.
    private static func mapped<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as PlainHTTPError {
            if error == .cancelled { throw CancellationError() }
            throw failure(error)
        }
    }

    /// The client's error as a ``TransportFailure`` whose text names the server and what
    /// broke, never a header (so no token or signature can leak through it).
    public static func failure(_ error: PlainHTTPError) -> TransportFailure {
        switch error {
        case .timedOut:
            return TransportFailure(.timedOut, "no data before the timeout", cause: error)
        // A connection closed before any answer, as when a server drops an idle
        // keep-alive connection just as a request goes out: worth another attempt,
        // like a refused one.
        case .cannotConnect, .connectionLost:
            return TransportFailure(.cannotConnect, error.description, cause: error)
        case .badResponse, .tooLarge, .invalidRequest, .cancelled:
            return TransportFailure(.other, error.description, cause: error)
        }
    }
}
