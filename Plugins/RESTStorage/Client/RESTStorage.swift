import PlugboardAPI
import PlugboardHTTPClient
import PlugboardURLSession
import PlugboardCrypto

/// An ``ObjectStorage`` kept by another Plugboard host, over its `/v1/objects` HTTP API
/// (docs/plugins/RESTStorage.md).
///
/// Every argument is checked here first, with the shared validators and in the contract's
/// order, so that a bad call fails the same way as on any other backend and never reaches
/// the network. The server's storage error codes come back as the same codes; what only
/// HTTP can say (401, 503, a dropped connection) is mapped onto the contract's codes.
public final class RESTStorage: ObjectStorage, ManagedService {
    public let configuration: Configuration
    let transport: any HTTPTransport
    private let sleeper: any RetrySleeper
    private let random: @Sendable () -> Double
    private let policy: RetryPolicy
    private let plugin: String
    private let logger: Logger
    private let release: @Sendable () -> Void

    /// A storage that talks through `transport`, waits with `sleeper` and draws jitter
    /// from `random` (uniform in `0..<1`); tests inject all three.
    public init(configuration: Configuration, transport: any HTTPTransport, plugin: String, logger: Logger,
                sleeper: any RetrySleeper = TaskSleeper(),
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                retryPolicy: RetryPolicy? = nil,
                release: @escaping @Sendable () -> Void = {}) {
        self.configuration = configuration
        self.transport = transport
        self.sleeper = sleeper
        self.random = random
        self.policy = retryPolicy ?? RetryPolicy(maxRetries: configuration.maxRetries)
        self.plugin = plugin
        self.logger = logger
        self.release = release
    }

    /// A storage over ``PlainHTTPTransport`` for an `http://` base URL (bodies streamed both
    /// ways) or ``URLSessionTransport`` for an `https://` one (bodies in memory, up to
    /// ``maxBufferedBodyBytes`` for a streamed put), released by ``stop()``.
    public convenience init(configuration: Configuration, plugin: String, logger: Logger) {
        let timeout = configuration.timeoutSeconds
        if configuration.endpoint.base.hasPrefix("http://") {
            let transport = PlainHTTPTransport(timeoutSeconds: timeout)
            self.init(configuration: configuration, transport: transport, plugin: plugin, logger: logger,
                      release: { transport.invalidate() })
        } else {
            let transport = URLSessionTransport(timeoutSeconds: timeout)
            self.init(configuration: configuration, transport: transport, plugin: plugin, logger: logger,
                      release: { transport.invalidate() })
        }
    }

    // MARK: ManagedService

    /// Nothing to acquire: the other host may be down at start and come up later, which
    /// each call reports as `storage.unavailable`; failing the load would be wrong.
    public func start() async throws {
        logger.info("remote storage configured", metadata: [
            "baseURL": .string(configuration.endpoint.base),
            "token": configuration.token == nil ? "none" : "set",
            "timeoutSeconds": "\(configuration.timeoutSeconds)", "maxRetries": "\(configuration.maxRetries)"])
    }

    public func stop() async {
        release()
    }

    // MARK: ObjectStorage

    public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let resolvedType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        return try await put(key, data: data, contentType: resolvedType, metadata: metadata, extraHeaders: [])
    }

    /// The PUT itself, arguments checked, with `extraHeaders` (a condition) added.
    private func put(_ key: String, data: [UInt8], contentType resolvedType: String, metadata: [String: String],
                     extraHeaders: [(name: String, value: String)]) async throws -> ObjectInfo {
        // Always sent, `application/octet-stream` included: URLSession would otherwise add
        // a form content type of its own to a request with a body.
        let headers = [(name: "Content-Type", value: resolvedType)] + MetadataHeaders.fields(metadata) + extraHeaders
        let response = try await call(.put, configuration.endpoint.object(key), "put", key, headers: headers, body: data,
                                      success: Self.putSuccess, expected: Self.putExpected)
        return try response.decode { answer throws(UnexpectedResponse) in
            let etag = try Self.hashing { () throws(CryptoError) in try MD5Hasher.hash(data) }
            return try storedInfo(answer, key: key, size: data.count, etag: etag, contentType: resolvedType, metadata: metadata)
        }
    }

    static let putSuccess: Set<Int> = [200, 201]
    static let putExpected = "HTTP 200 with the stored object's info"

    /// What a PUT's answer says was stored, once it matches what was sent.
    func storedInfo(_ answer: HTTPResponse, key: String, size: Int, etag: String, contentType: String,
                    metadata: [String: String]) throws(UnexpectedResponse) -> ObjectInfo {
        let info = try ResponseDecoding.putInfo(answer.body)
        try check(info, matches: key, size: size, etag: etag, contentType: contentType, metadata: metadata)
        return ObjectInfo(key: key, size: size, etag: info.etag, contentType: contentType,
                          lastModified: info.lastModified, metadata: metadata)
    }

    /// The largest body collected for a streamed put that cannot stream: 1 GiB. Over
    /// `https://` the transport (URLSession) takes a request body only whole, so the body
    /// is read into memory first. (Over `http://` every body streams, one of unknown
    /// length chunked.)
    public static let maxBufferedBodyBytes = 1 << 30

    /// Sends `body` as one PUT, with `If-None-Match: *` for `.absent` and
    /// `If-Match: "etag"` for `.matches`: the server's storage checks the condition
    /// atomically and answers 412 when it does not hold.
    ///
    /// Over `http://` the body goes out as it is read, chunked when its length is not
    /// known (``streamedPut(_:_:over:length:contentType:metadata:headers:)``); over
    /// `https://` it is collected first, up to ``maxBufferedBodyBytes``, and sent whole.
    public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                    condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let resolvedType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        var conditionHeaders: [(name: String, value: String)] = []
        switch condition {
        case .none: break
        case .absent: conditionHeaders = [(name: "If-None-Match", value: "*")]
        case .matches(let etag): conditionHeaders = [(name: "If-Match", value: "\"" + etag + "\"")]
        @unknown default:
            throw PlugboardError.conditionUnsupported(
                key: key, condition: condition, backend: "RESTStorage",
                hint: "Rebuild RESTStorage against the PlugboardAPI that defines the condition, or write without it.")
        }
        guard let plain = transport as? PlainHTTPTransport else {
            let data = try await body.collect(upTo: Self.maxBufferedBodyBytes)
            return try await put(key, data: data, contentType: resolvedType, metadata: metadata, extraHeaders: conditionHeaders)
        }
        return try await streamedPut(key, body, over: plain, length: body.length, contentType: resolvedType, metadata: metadata,
                                     headers: conditionHeaders)
    }

    /// A GET, with `Range: bytes=...` for a range: 206 with `Content-Range` for the part,
    /// 416 for a range that selects nothing (``PlugboardError/Code/storageRangeNotSatisfiable``),
    /// 200 with the whole object when the server ignored the range (then sliced here).
    ///
    /// Over `http://` the body streams (``streamedGet(_:range:over:)``): it is read from
    /// the connection a piece at a time as the caller reads it. Over `https://` the answer
    /// is read whole (URLSession hands it over only whole), so it holds the object or the
    /// range in memory.
    public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        try range?.validate()
        if let plain = transport as? PlainHTTPTransport { return try await streamedGet(key, range: range, over: plain) }
        guard let range else { return try ObjectStream(try await get(key), key: key, range: nil) }
        let response = try await call(.get, configuration.endpoint.object(key), "get", key,
                                      headers: [(name: "Range", value: Self.rangeHeader(range))],
                                      success: Self.rangeSuccess, expected: Self.rangeExpected)
        return try Self.rangeStream(response, key: key, range: range)
    }

    static let rangeSuccess: Set<Int> = [200, 206]
    static let rangeExpected = "HTTP 206 with the range's bytes, or 200 with the object's"

    static func rangeHeader(_ range: ByteRange) -> String {
        switch range {
        case .closed(let first, let last): "bytes=\(first)-\(last)"
        case .from(let first): "bytes=\(first)-"
        case .suffix(let count): "bytes=-\(count)"
        }
    }

    /// The stream of a ranged answer whose body was read whole.
    static func rangeStream(_ response: Answer, key: String, range: ByteRange) throws(PlugboardError) -> ObjectStream {
        try response.decode { answer throws(UnexpectedResponse) in
            guard answer.status == 206 else {
                let info = try ResponseDecoding.headerInfo(answer, key: key, size: answer.body.count)
                do throws(PlugboardError) {
                    return try ObjectStream(StoredObject(info: info, data: answer.body), key: key, range: range)
                } catch {
                    throw UnexpectedResponse(expected: "an object the range \(range) selects bytes of", found: error.message)
                }
            }
            let (info, offsets) = try rangeInfo(answer, key: key, range: range, sent: answer.body.count)
            return ObjectStream(info: info, range: offsets, body: ObjectBody(answer.body))
        }
    }

    /// The whole object's info and the offsets of the part a 206 answer of `sent` bytes
    /// carries, once its Content-Range says they are the bytes `range` asked for.
    static func rangeInfo(_ answer: HTTPResponse, key: String, range: ByteRange,
                          sent: Int) throws(UnexpectedResponse) -> (ObjectInfo, Range<Int>) {
        let text = answer.header("content-range") ?? ""
        guard let (offsets, size) = contentRange(text), offsets.count == sent, range.resolve(size: size) == offsets else {
            throw UnexpectedResponse(expected: "a Content-Range for \(range) matching the \(sent) bytes sent",
                                     found: "Content-Range \(RESTStorageText.quote(text))")
        }
        // Content-Length is the part's; the object's size is Content-Range's.
        var info = try ResponseDecoding.headerInfo(answer, key: key, size: sent)
        info.size = size
        return (info, offsets)
    }

    /// The offsets and the complete length of `bytes first-last/size`.
    static func contentRange(_ text: String) -> (Range<Int>, Int)? {
        guard text.hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/")
        guard parts.count == 2, let size = Int(parts[1]) else { return nil }
        let bounds = parts[0].split(separator: "-")
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first <= last, last < size else { return nil }
        return (first..<(last + 1), size)
    }

    public func get(_ key: String) async throws -> StoredObject {
        try ObjectKey.validate(key)
        let response = try await call(.get, configuration.endpoint.object(key), "get", key,
                                      success: [200], expected: Self.getExpected)
        return try Self.checkedObject(response, key: key)
    }

    static let getExpected = "HTTP 200 with the object's bytes"

    /// The object a whole GET answer holds, once its body's MD5 is its ETag.
    static func checkedObject(_ response: Answer, key: String) throws(PlugboardError) -> StoredObject {
        try response.decode { answer throws(UnexpectedResponse) in
            let info = try ResponseDecoding.headerInfo(answer, key: key, size: answer.body.count)
            let digest = try hashing { () throws(CryptoError) in try MD5Hasher.hash(answer.body) }
            guard digest == info.etag else {
                throw UnexpectedResponse(expected: "a body whose MD5 is the ETag \(info.etag)",
                                         found: "\(answer.body.count) bytes with MD5 \(digest)")
            }
            return StoredObject(info: info, data: answer.body)
        }
    }

    public func head(_ key: String) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let response = try await call(.head, configuration.endpoint.object(key), "head", key,
                                      success: [200], expected: "HTTP 200 with the object's headers")
        return try response.decode { answer throws(UnexpectedResponse) in
            try ResponseDecoding.headerInfo(answer, key: key, size: nil)
        }
    }

    public func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        _ = try await call(.delete, configuration.endpoint.object(key), "delete", key, success: [200, 204], expected: "HTTP 204")
    }

    public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try ListingRequest.validate(prefix: prefix, limit: limit)
        let url = configuration.endpoint.listing(prefix: prefix, limit: limit, cursor: continuationToken)
        let response = try await call(.get, url, "list", prefix, success: [200], expected: "HTTP 200 with a listing")
        return try response.decode { answer throws(UnexpectedResponse) in
            let listing = try ResponseDecoding.listing(answer.body)
            if let stray = listing.objects.first(where: { !ObjectKey.hasPrefix($0.key, prefix) }) {
                throw UnexpectedResponse(expected: "keys that start with the prefix \(RESTStorageText.quote(prefix))",
                                         found: "the key \(RESTStorageText.quote(stray.key))")
            }
            if listing.objects.count > limit {
                throw UnexpectedResponse(expected: "at most \(limit) objects", found: "\(listing.objects.count)")
            }
            return listing
        }
    }

    // MARK: Sending

    func makeRequest(_ method: HTTPRequest.Method, _ url: String,
                             headers: [(name: String, value: String)] = [], body: [UInt8] = []) -> HTTPRequest {
        var fields = headers
        if let token = configuration.token { fields.append((name: "Authorization", value: "Bearer " + token)) }
        return HTTPRequest(method: method, url: url, headers: fields, body: body)
    }

    /// Sends one request of `operation` and returns an answer with one of the `success`
    /// statuses; any other answer, or none, is thrown as the contract's error.
    func call(_ method: HTTPRequest.Method, _ url: String, _ operation: String, _ key: String,
                      headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                      success: Set<Int>, expected: String) async throws -> Answer {
        let (response, mapping) = try await send(makeRequest(method, url, headers: headers, body: body),
                                                 operation: operation, key: key)
        guard success.contains(response.status) else { throw mapping.error(for: response, expected: expected) }
        return Answer(response: response, mapping: mapping)
    }

    /// Sends `request` whole through the transport, with ``exchange(_:operation:key:mayRetry:_:)``'s retries.
    private func send(_ request: HTTPRequest, operation: String, key: String?) async throws -> (HTTPResponse, FailureMapping) {
        let (response, _, mapping) = try await exchange(request, operation: operation, key: key) { request in
            (try await transport.send(request), ())
        }
        return (response, mapping)
    }

    /// Runs `perform` for `request`, again after a retryable outcome while retries remain
    /// and `mayRetry` says the request can go again (a streamed body cannot once it was
    /// read). Returns the last response, what else `perform` returned with it, and the
    /// mapping for its errors; throws the mapped error when no response came, a body's
    /// own error (``BodyFailure``) unchanged, and `CancellationError` as soon as the task
    /// is cancelled.
    func exchange<Extra>(_ request: HTTPRequest, operation: String, key: String?, mayRetry: () -> Bool = { true },
                         _ perform: (HTTPRequest) async throws -> (HTTPResponse, Extra)) async throws -> (HTTPResponse, Extra, FailureMapping) {
        var attempt = 0
        while true {
            try Task.checkCancellation()
            attempt += 1
            let reply: Result<(HTTPResponse, Extra), TransportFailure>
            do {
                reply = .success(try await perform(request))
            } catch let failure as TransportFailure {
                reply = .failure(failure)
            } catch is CancellationError {
                throw CancellationError()
            } catch let failure as BodyFailure {
                throw failure.underlying
            } catch {
                reply = .failure(TransportFailure(.other, String(describing: error)))
            }
            let outcome = reply.map(\.0)
            let mapping = mapping(operation, key, attempts: attempt)
            let retriesLeft = RetryPolicy.isIdempotent(request.method) && attempt <= policy.maxRetries && mayRetry()
            guard retriesLeft, RetryPolicy.isRetryable(outcome) else {
                switch reply {
                case .success(let (response, extra)): return (response, extra, mapping)
                case .failure(let failure): throw mapping.error(for: failure)
                }
            }
            let retryAfter = (try? outcome.get())?.retryAfterSeconds
            let wait = policy.delay(beforeRetry: attempt - 1, unit: random(), retryAfterSeconds: retryAfter)
            logger.notice("retrying storage request", metadata: [
                "operation": .string(operation), "attempt": "\(attempt)",
                "outcome": .string(Self.summary(outcome)), "waitMilliseconds": "\(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)"])
            try await sleeper.sleep(for: wait)
        }
    }

    func mapping(_ operation: String, _ key: String?, attempts: Int) -> FailureMapping {
        FailureMapping(operation: operation, key: key, base: configuration.endpoint.base, plugin: plugin,
                       tokenConfigured: configuration.token != nil, attempts: attempts)
    }

    private static func summary(_ outcome: Result<HTTPResponse, TransportFailure>) -> String {
        switch outcome {
        case .success(let response): return "HTTP \(response.status)"
        case .failure(let failure): return failure.description
        }
    }

    /// The server must have stored what was sent: same key, size, MD5 (`etag`), and (when
    /// its JSON has them) content type and metadata.
    private func check(_ info: ObjectInfo, matches key: String, size: Int, etag digest: String, contentType: String,
                       metadata: [String: String]) throws(UnexpectedResponse) {
        guard ObjectKey.isSame(info.key, as: key) else {
            throw UnexpectedResponse(expected: "the key \(RESTStorageText.quote(key)) in the object info",
                                     found: RESTStorageText.quote(info.key))
        }
        guard info.size == size else {
            throw UnexpectedResponse(expected: "the size \(size) (the bytes sent)", found: "\(info.size)")
        }
        guard info.etag == digest else {
            throw UnexpectedResponse(expected: "the ETag \(digest) (the MD5 of the bytes sent)", found: info.etag)
        }
        guard info.contentType == contentType else {
            throw UnexpectedResponse(expected: "the content type \(RESTStorageText.quote(contentType)) that was sent",
                                     found: RESTStorageText.quote(info.contentType))
        }
        guard info.metadata == metadata else {
            throw UnexpectedResponse(expected: "the \(metadata.count) metadata entries that were sent",
                                     found: "\(info.metadata.count) entries that differ")
        }
    }

    /// `digest`'s result in hex; libcrypto's failure as what was expected and found.
    static func hashing(_ digest: () throws(CryptoError) -> [UInt8]) throws(UnexpectedResponse) -> String {
        do {
            return Hex.encode(try digest())
        } catch {
            throw UnexpectedResponse(expected: "an MD5 digest from libcrypto", found: error.message)
        }
    }
}

/// A streamed body's own error, carried through the transport and the retry loop unchanged.
struct BodyFailure: Error {
    let underlying: any Error
}

/// A success answer with the mapping that turns its unexpected content into `storage.failed`.
struct Answer {
    let response: HTTPResponse
    let mapping: FailureMapping

    func decode<T>(_ read: (HTTPResponse) throws(UnexpectedResponse) -> T) throws(PlugboardError) -> T {
        do throws(UnexpectedResponse) {
            return try read(response)
        } catch {
            throw mapping.error(for: error, status: response.status)
        }
    }
}
