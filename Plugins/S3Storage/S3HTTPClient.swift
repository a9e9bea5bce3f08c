import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTPClient
import PlugboardSigV4
import PlugboardURLSession

/// Signs and sends S3 requests, retrying what may be retried: over PlugboardHTTPClient's
/// ``PlainHTTPTransport`` for `http://` endpoints, over its ``URLSessionTransport`` (which
/// brings TLS) for `https://` ones.
///
/// Every ObjectStorage call is idempotent (a PUT of the same bytes replaces the object
/// with the same object), so all are retried on 5xx, SlowDown and connection errors, by
/// the ``RetryPolicy`` RESTStorage uses too (a `Retry-After` honoured up to its cap).
final class S3HTTPClient: Sendable {
    let configuration: S3Configuration
    let mapping: S3ErrorMapping
    let retry: RetryPolicy
    private let signer: SigV4Signer
    private let signingKeys = SigningKeyCache()
    private let transport: Transport
    private let logger: Logger

    init(configuration: S3Configuration, logger: Logger, retry: RetryPolicy? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.mapping = S3ErrorMapping(configuration: configuration, redactor: S3Redactor(configuration.credentials))
        self.retry = retry ?? RetryPolicy(maxRetries: configuration.maxRetries)
        self.signer = SigV4Signer(accessKeyId: configuration.credentials.accessKeyId,
                                  secretAccessKey: configuration.credentials.secretAccessKey,
                                  region: configuration.region, service: "s3")
        guard configuration.endpoint.scheme == "https" else {
            // A gateway's clients reach S3 at once, many at a time: with the client's
            // default of 4 idle connections a host, most requests opened a new one.
            transport = .plain(PlainHTTPTransport(timeoutSeconds: configuration.timeoutSeconds, maxIdlePerHost: 64))
            return
        }
        transport = .session(URLSessionTransport(timeoutSeconds: configuration.timeoutSeconds, maxConnectionsPerHost: 32))
    }

    /// Lets running requests finish and frees the session or the idle connections; later
    /// requests fail as `storage.unavailable`.
    func shutdown() {
        switch transport {
        case .plain(let plain): plain.invalidate()
        case .session(let session): session.invalidate()
        }
    }

    /// Sends `request`, retrying, and returns the first answer `accept` takes. With
    /// `streamingSuccess` over the plain-HTTP client, a 2xx answer's body stays on the
    /// connection (``S3Response/stream``) for the caller to read; once handed over it is
    /// not retried.
    ///
    /// - Throws: the mapped ``PlugboardError`` for an S3 error or a connection failure once
    ///   retries are spent, or `CancellationError` when the task is cancelled.
    func send(_ request: S3Request, _ operation: S3Operation, streamingSuccess: Bool = false,
              accept: (S3Response) -> Bool = { (200..<300).contains($0.status) }) async throws -> S3Response {
        var attempt = 0
        while true {
            try Task.checkCancellation()
            let failure: PlugboardError
            let retryable: Bool
            var retryAfterSeconds: Int? = nil
            do {
                let response = try await perform(try signed(request, date: AmzDate(iso8601: Timestamp.now().iso8601)), streamingSuccess: streamingSuccess)
                if accept(response) { return response }
                let (body, problem) = Self.errorBody(response.body)
                failure = mapping.error(operation, status: response.status, body: body, bodyProblem: problem,
                                        bucketRegion: response.header("x-amz-bucket-region"))
                retryable = S3ErrorMapping.isRetryable(status: response.status, code: body?.code)
                retryAfterSeconds = HTTPResponse(status: response.status, headers: response.headers).retryAfterSeconds
            } catch let error as TransportFailure {
                (failure, retryable) = try connectionFailure(error, operation)
            }
            guard retryable, attempt < retry.maxRetries else { throw failure }
            let pause = retry.delay(beforeRetry: attempt, retryAfterSeconds: retryAfterSeconds)
            attempt += 1
            logger.notice("retrying S3 request", metadata: [
                "operation": .string(operation.kind.rawValue), "attempt": .string("\(attempt) of \(retry.maxRetries)"),
                "after": .string("\(pause)"), "reason": .string(failure.code.rawValue)])
            try await Task.sleep(for: pause)
        }
    }

    /// Whether bodies can go out as they are read (``sendStreaming(_:length:_:accept:body:)``)
    /// and come in as they are asked for (`send(_:_:streamingSuccess:accept:)`): over the
    /// plain-HTTP client, yes; URLSession on this toolchain takes a body only whole (no
    /// bounded input stream, no backpressure in its delegate) and hands one over only whole.
    var streamsBodies: Bool {
        if case .plain = transport { return true }
        return false
    }

    /// Sends `request` (signed with `UNSIGNED-PAYLOAD`, announcing `length` bytes) over the
    /// plain-HTTP client, with the body written by `body` as it is read, and returns the
    /// answer `accept` takes. Not retried: the body can be read only once.
    ///
    /// - Throws: the mapped ``PlugboardError`` for an S3 error or a connection failure,
    ///   what `body` throws, or `CancellationError`.
    func sendStreaming(_ request: S3Request, length: Int, _ operation: S3Operation,
                       accept: (S3Response) -> Bool = { (200..<300).contains($0.status) },
                       body: (PlainHTTPTransport.BodyWriter) async throws -> Void) async throws -> S3Response {
        guard case .plain(let plain) = transport else {
            throw PlugboardError(.storageUnsupported, "\(operation.description) cannot stream its body over https",
                                 detail: "Expected the plain-HTTP client of an http:// endpoint, found URLSession.",
                                 hint: "Collect the body and send it whole.")
        }
        try Task.checkCancellation()
        var request = request
        request.payloadHash = SigV4Signer.unsignedPayload
        let wire = try httpRequest(try signed(request, date: AmzDate(iso8601: Timestamp.now().iso8601)))
        let response: S3Response
        do {
            response = S3Response(try await plain.upload(wire, length: length, expectsContinue: false, body))
        } catch let error as TransportFailure {
            throw try connectionFailure(error, operation).0
        }
        if accept(response) { return response }
        let (errorBody, problem) = Self.errorBody(response.body)
        throw mapping.error(operation, status: response.status, body: errorBody, bodyProblem: problem,
                            bucketRegion: response.header("x-amz-bucket-region"))
    }

    /// The URL, headers and signature for one attempt, as URLSession takes them.
    func urlRequest(for request: S3Request, date: AmzDate) throws -> URLRequest {
        let signed = try signed(request, date: date)
        do {
            return try URLSessionTransport.urlRequest(try httpRequest(signed), timeoutSeconds: configuration.timeoutSeconds)
        } catch {
            throw urlFailure(signed)
        }
    }

    /// The host, path, query, headers and signature for one attempt.
    func signed(_ request: S3Request, date: AmzDate) throws -> SignedS3Request {
        let endpoint = configuration.endpoint
        let objectPath = request.key.map { "/" + S3URIEncoding.encodePath($0) }
        let canonicalObjectPath = request.key.map { "/" + S3URIEncoding.canonicalPath($0) }
        let path: String
        let canonicalPath: String
        let host: String
        if configuration.pathStyle {
            path = "/" + configuration.bucket + (objectPath ?? "")
            canonicalPath = "/" + configuration.bucket + (canonicalObjectPath ?? "")
            host = endpoint.authority
        } else {
            path = objectPath ?? "/"
            canonicalPath = canonicalObjectPath ?? "/"
            host = configuration.bucket + "." + endpoint.authority
        }
        var headers = request.headers
        headers.append(("host", host))
        headers.append(("x-amz-date", date.stamp))
        headers.append(("x-amz-content-sha256", request.payloadHash))
        if let token = configuration.credentials.sessionToken {
            headers.append(("x-amz-security-token", token))
        }
        let signed: SigV4Signer.Signed
        do {
            let key = try signingKeys.key(day: date.day) { () throws(CryptoError) in try signer.signingKey(day: date.day) }
            signed = try signer.sign(method: request.method, path: canonicalPath, query: request.query, headers: headers,
                                     payloadHash: request.payloadHash, date: date, signingKey: key)
        } catch {
            throw PlugboardError(.storageFailed, "cannot sign the S3 request", detail: "\(error)",
                                 hint: "S3Storage needs OpenSSL's libcrypto.so.3 for SHA-256 and HMAC (Debian: apt-get install libssl3).")
        }
        let query = request.query
            .map { S3URIEncoding.encodeQueryComponent($0.0) + "=" + S3URIEncoding.encodeQueryComponent($0.1) }
            .joined(separator: "&")
        var sent = headers.filter { $0.0 != "host" }
        sent.append(("Authorization", signed.authorization))
        return SignedS3Request(method: request.method, host: host, path: path, query: query, headers: sent, body: request.body)
    }

    /// One signed attempt as PlugboardHTTPClient's transports send it: the URL names the
    /// signed Host, so the plain transport connects where it points (IPv6 brackets removed).
    func httpRequest(_ request: SignedS3Request) throws(PlugboardError) -> HTTPRequest {
        guard let method = HTTPRequest.Method(rawValue: request.method) else {
            throw PlugboardError(.storageFailed, "cannot send an S3 request with method \(PlugboardError.quoted(request.method))",
                                 detail: "Expected GET, HEAD, PUT, POST or DELETE.", hint: "This is a bug in S3Storage.")
        }
        return HTTPRequest(method: method, url: "\(configuration.endpoint.scheme)://\(request.host)\(request.target)",
                           headers: request.headers.map { (name: $0.0, value: $0.1) }, body: request.body)
    }

    /// The signed request as ``PlainHTTPClient`` sends it; nil when its URL is not `http://`.
    func plainRequest(_ request: SignedS3Request) -> PlainHTTPRequest? {
        guard let http = try? httpRequest(request) else { return nil }
        return PlainHTTPTransport.wireRequest(http)
    }

    private func urlFailure(_ request: SignedS3Request) -> PlugboardError {
        PlugboardError(.storageFailed, "cannot build the URL for \(PlugboardError.quoted(request.path))",
                       detail: "Foundation refused the URL built from the endpoint, the bucket and the encoded key.",
                       hint: "Check \"endpoint\" and \"bucket\" in the plugin's config.")
    }

    /// Sends one request; cancelling the calling task cancels it.
    private func perform(_ signed: SignedS3Request, streamingSuccess: Bool) async throws -> S3Response {
        let request = try httpRequest(signed)
        switch transport {
        case .plain(let plain):
            guard streamingSuccess else { return S3Response(try await plain.send(request)) }
            let (response, stream) = try await plain.open(request)
            return S3Response(response, stream: stream)
        case .session(let session):
            return S3Response(try await session.send(request))
        }
    }

    private static func errorBody(_ bytes: [UInt8]) -> (S3ErrorBody?, String?) {
        guard !bytes.isEmpty else { return (nil, nil) }
        do {
            return (try S3ErrorBody.parse(bytes), nil)
        } catch {
            let shown = String(decoding: bytes.prefix(120), as: UTF8.self)
            return (nil, "\(error.description); it starts \(PlugboardError.quoted(shown, maxCharacters: 120))")
        }
    }

    private func timeoutFailure(_ operation: S3Operation) -> (PlugboardError, Bool) {
        (PlugboardError(.storageUnavailable, "\(operation.description) failed: \(configuration.endpoint) did not answer in time",
                        detail: "No data for \(configuration.timeoutSeconds) seconds (\"timeoutSeconds\"), after \(retry.maxRetries) retries.",
                        hint: "Check that the server is up and reachable, or raise \"timeoutSeconds\"."), true)
    }

    /// A request that got no answer, as the storage error and whether to retry it; a
    /// cancellation comes back as `CancellationError`.
    private func connectionFailure(_ failure: TransportFailure, _ operation: S3Operation) throws -> (PlugboardError, Bool) {
        if Task.isCancelled { throw CancellationError() }
        switch failure.cause {
        case let error as PlainHTTPError:
            return connectionFailure(error, operation)
        case let error as URLError:
            if error.code == .cancelled { throw CancellationError() }
            return connectionFailure(error, operation)
        default:
            guard failure.kind == .stopped else {
                return (PlugboardError(.storageFailed, "\(operation.description) failed: the request to \(configuration.endpoint) was refused",
                                       detail: "The HTTP client reported: \(failure.description).",
                                       hint: "Check \"endpoint\" and \"bucket\" in the plugin's config."), false)
            }
            return (PlugboardError(.storageUnavailable, "\(operation.description) failed: this S3Storage instance was stopped",
                                   detail: "The request was not sent: \(failure.description).",
                                   hint: "Resolve ObjectStorage from the container again; the plugin was unloaded or replaced."), false)
        }
    }

    private func connectionFailure(_ error: PlainHTTPError, _ operation: S3Operation) -> (PlugboardError, Bool) {
        let endpoint = configuration.endpoint.description
        switch error {
        case .timedOut:
            return timeoutFailure(operation)
        case .tooLarge, .invalidRequest:
            return (PlugboardError(.storageFailed, "\(operation.description) failed: the exchange with \(endpoint) was refused",
                                   detail: "The HTTP client reported: \(error).",
                                   hint: "An object this large does not fit in memory here; a header must not hold CR or LF."), false)
        case .cannotConnect, .connectionLost, .badResponse, .cancelled:
            return (PlugboardError(.storageUnavailable, "\(operation.description) failed: cannot reach \(endpoint)",
                                   detail: "The HTTP client reported: \(error), after \(retry.maxRetries) retries.",
                                   hint: "Check that the server is up and that \"endpoint\" and \"region\" are right."), true)
        }
    }

    /// Why a streamed answer's body broke off after `received` of the `expected` bytes.
    /// Not retried: the consumer already has the bytes before the break.
    func bodyFailure(_ error: PlainHTTPError, _ operation: S3Operation, expected: Int?, received: Int) -> PlugboardError {
        let expected = expected.map { "\($0) bytes" } ?? "a chunked body to its last chunk"
        if error == .timedOut {
            return PlugboardError(.storageUnavailable, "\(operation.description) failed: \(configuration.endpoint) stopped sending the object",
                                  detail: "Expected \(expected), received \(received) bytes, then no data for \(configuration.timeoutSeconds) seconds (\"timeoutSeconds\").",
                                  hint: "Check that the server is up and reachable, or raise \"timeoutSeconds\"; read the object again.")
        }
        return PlugboardError(.storageFailed, "\(operation.description) failed: the answer was cut short",
                              detail: "Expected \(expected), received \(received) bytes; the HTTP client reported: \(error).",
                              hint: "Retry; if it keeps happening, check the network between this host and S3.")
    }

    private func connectionFailure(_ error: URLError, _ operation: S3Operation) -> (PlugboardError, Bool) {
        let endpoint = configuration.endpoint.description
        switch error.code {
        case .timedOut:
            return timeoutFailure(operation)
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot, .clientCertificateRejected, .secureConnectionFailed:
            return (PlugboardError(.storageFailed, "\(operation.description) failed: TLS with \(endpoint) failed",
                                   detail: "URLSession reported: \(error.localizedDescription) (code \(error.code.rawValue)).",
                                   hint: "Check the server's certificate, or use http:// in \"endpoint\" for a local test server."), false)
        default:
            return (PlugboardError(.storageUnavailable, "\(operation.description) failed: cannot reach \(endpoint)",
                                   detail: "URLSession reported: \(error.localizedDescription) (code \(error.code.rawValue)), after \(retry.maxRetries) retries.",
                                   hint: "Check that the server is up and that \"endpoint\" and \"region\" are right."), true)
        }
    }
}

/// What carries requests: TLS needs URLSession; plain HTTP goes over sockets directly.
private enum Transport: Sendable {
    case plain(PlainHTTPTransport)
    case session(URLSessionTransport)
}

/// The signing key of the current day, derived once a day rather than once a request.
private final class SigningKeyCache: Sendable {
    private let cached = LockedValueBox<(day: String, key: [UInt8])>(("", []))

    func key(day: String, derive: () throws(CryptoError) -> [UInt8]) throws(CryptoError) -> [UInt8] {
        if let key = cached.withLock({ $0.day == day ? $0.key : nil }) { return key }
        let fresh = try derive()
        cached.withLock { $0 = (day, fresh) }
        return fresh
    }
}
