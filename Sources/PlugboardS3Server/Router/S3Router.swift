import PlugboardAPI
import PlugboardConcurrency
import PlugboardHTTP
import PlugboardHost

/// The S3 endpoint (`serve --s3-listen`): addresses each request (path style, or virtual
/// hosted with `--s3-domain`), checks its SigV4 signature, names its operation, and runs
/// it over the storage bound now, through a lease held for the request, exactly as the
/// native API does, so a hot swap never fails an S3 request either. Errors are S3's XML
/// with `x-amz-request-id`.
public final class S3Router: HTTPHandler {
    let provider: any StorageProvider
    let configuration: Configuration
    /// ``Configuration/domain`` in lower case, as `Host` is compared.
    let domain: String?
    let verifier: SigV4Verifier
    let logger: Logger
    public let metrics = S3Metrics()
    private let ids = S3RequestIDs()
    private let buckets: S3BucketGate
    /// Made once: a closure built per request would cost an allocation on every one.
    private let pluginErrorMapping: @Sendable (PlugboardError.Code) -> PlugboardError.Mapping?

    /// Serves with `configuration` as it is: `serve` has called its ``Configuration/validate()``.
    public convenience init(provider: any StorageProvider, configuration: Configuration, logger: Logger) {
        self.init(provider: provider, configuration: configuration, logger: logger, buckets: S3BucketGate())
        // Said once, at start: whether other gateways may serve the same backend
        // (docs/S3_API.md, "Several gateways behind a load balancer").
        if case .success(let storage) = provider.boundStorage(provider.container) {
            let sharing = S3BucketFence.sharing(of: storage)
            logger.log(sharing.unknown ? .warning : .notice, "S3 gateways sharing the backend: \(sharing.text)")
        }
    }

    /// With a gate of the caller's (a test's, trusting a bucket it found for longer than
    /// the test can take on a busy machine).
    init(provider: any StorageProvider, configuration: Configuration, logger: Logger, buckets: S3BucketGate) {
        self.buckets = buckets
        self.provider = provider
        self.configuration = configuration
        domain = configuration.domain?.lowercased()
        verifier = SigV4Verifier(credentials: configuration.effectiveCredentials, region: configuration.region,
                                 signatureV2: configuration.signatureV2)
        self.logger = logger
        pluginErrorMapping = { [provider] code in provider.pluginErrorMapping(for: code) }
    }

    /// Every S3 request goes to ``respond(to:)`` or ``respondWithoutWaiting(to:)``: its
    /// errors need a request ID and S3's XML, and a request the signature check refuses is
    /// refused there before any of its body is read.
    public func screen(_ head: RequestHead) -> HTTPResponse? { nil }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let id = ids.next()
        var address: Address?
        var operation: String?
        let prepared: Prepared
        do {
            prepared = try prepare(request, id: id, address: &address, operation: &operation)
        } catch {
            return answer(errorResponse(error, head: request.head, address: address, id: id), id: id, operation: operation)
        }
        return await finish(prepared, request.head, address: address, operation: operation)
    }

    /// The same request path as the native API's: a request without a body is prepared
    /// once on the event loop's thread (addressed, its signature checked, its operation
    /// named, a lease taken and the storage bound), a GetObject or HeadObject the storage
    /// has at once is answered there, and anything else goes on as a task from what was
    /// prepared.
    public func respondWithoutWaiting(to request: HTTPRequest) -> ImmediateAnswer {
        let id = ids.next()
        var address: Address?
        var operation: String?
        let prepared: Prepared
        do {
            prepared = try prepare(request, id: id, address: &address, operation: &operation)
        } catch {
            return .answer(answer(errorResponse(error, head: request.head, address: address, id: id), id: id, operation: operation))
        }
        if prepared.operation == .getObject || prepared.operation == .headObject {
            do {
                // The answer straight into `answer`, which consumes it: held in a variable
                // first, its headers' array would be shared, and the append would copy it.
                if let response = prepared.operation == .getObject
                    ? try ObjectOperations.getObjectWithoutWaiting(prepared.context, prepared.request)
                    : try ObjectOperations.headObjectWithoutWaiting(prepared.context, prepared.request) {
                    prepared.lease.release()
                    return .answer(answer(response, id: id, operation: operation))
                }
            } catch {
                prepared.lease.release()
                return .answer(answer(errorResponse(error, head: request.head, address: address, id: id), id: id, operation: operation))
            }
        }
        let (head, addressed, name) = (request.head, address, operation)
        return .later { [self] in await finish(prepared, head, address: addressed, operation: name) }
    }

    /// Runs a prepared request's operation and releases its lease.
    private func finish(_ prepared: Prepared, _ head: RequestHead, address: Address?, operation: String?) async -> HTTPResponse {
        defer { prepared.lease.release() }
        do {
            return answer(try await dispatch(prepared.operation, prepared.context, prepared.request), id: prepared.request.requestID,
                          operation: operation)
        } catch {
            return answer(errorResponse(error, head: head, address: address, id: prepared.request.requestID), id: prepared.request.requestID,
                          operation: operation)
        }
    }

    /// Every answer names its request and the operation it was routed by (for the log line
    /// and the metric: parsing the target again there would miss what only the head
    /// tells, a copy's source header or a virtual-hosted bucket).
    private func answer(_ response: consuming HTTPResponse, id: String, operation: String?) -> HTTPResponse {
        Self.identify(&response, id: id)
        response.label = operation
        return response
    }

    public func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse {
        let id = ids.next()
        var response = errorResponse(error, head: head, address: nil, id: id)
        response.headers.append(contentsOf: error.headers)
        Self.identify(&response, id: id)
        return response
    }

    /// Every answer names its request, the server's own refusals (a body too large or too
    /// slow, a head too long, no room for the body) as well as the operations' answers.
    static func identify(_ response: inout HTTPResponse, id: String) {
        response.headers.append(("x-amz-request-id", id))
        response.headers.append(("x-amz-id-2", id))
        response.headers.append(("Server", "Plugboard"))
    }

    public func completed(_ exchange: Exchange) {
        let operation = exchange.label ?? Self.operationName(method: exchange.method, target: exchange.target)
        metrics.record(operation: operation, status: exchange.status, seconds: exchange.durationSeconds)
        logger.info("\(operation) \(exchange.method) \(Self.loggable(exchange.target).prefix(1024)) \(exchange.status) \(exchange.bytes)B \(Self.milliseconds(exchange.durationSeconds))ms",
                    metadata: ["peer": .string(exchange.peer)])
    }

    /// The target without a presigned URL's signature (SigV4's or V2's): until it expires
    /// the URL is a credential, and logs never hold one.
    static func loggable(_ target: String) -> String {
        guard let question = target.firstIndex(of: "?") else { return target }
        // SigV4's X-Amz-Signature, and Signature Version 2's Signature.
        guard target.lowercased().contains("signature=") else { return target }
        let items = target[target.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            let name = item.lowercased()
            for prefix in ["x-amz-signature=", "signature="] where name.hasPrefix(prefix) {
                return String(item.prefix(prefix.count)) + "<redacted>"
            }
            return String(item)
        }
        return String(target[...question]) + items.joined(separator: "&")
    }

    // MARK: the request's way through

    struct Address {
        var bucket: String?
        var key: String?
        /// The bucket when `Host` named it (virtual-hosted style): Signature Version 2
        /// signs it in front of the path.
        var hostBucket: String?
    }

    /// A request ready for its operation: everything but the operation itself, done once,
    /// on whichever path (at once or in a task) it goes on. Whoever ends it releases the lease.
    struct Prepared: Sendable {
        var operation: S3Operation
        var context: S3Context
        var request: S3Request
        var lease: Lease
    }

    /// Addresses the request, checks its signature, names its operation, takes a lease and
    /// finds the storage bound in it; throws the refusal.
    private func prepare(_ request: HTTPRequest, id: String, address: inout Address?, operation label: inout String?) throws -> Prepared {
        let head = request.head
        let addressed = try Self.address(head, domain: domain)
        address = addressed
        let query: [(name: String, value: String)]
        do throws(HTTPError) {
            query = try PercentDecoding.queryItems(head.query)
        } catch {
            throw S3Error.invalidArgument("The query is not one S3 reads: \(error.error.message).")
        }
        let names = Set(query.map(\.name))
        guard let (operation, name) = S3Operation.identify(method: head.method, bucket: addressed.bucket, key: addressed.key,
                                                           query: names, copySource: head.headers["x-amz-copy-source"] != nil) else {
            throw S3Error.methodNotAllowed("The specified method is not allowed against this resource: \(head.method.prefix(20)) on \(addressed.key != nil ? "an object" : addressed.bucket != nil ? "a bucket" : "the service").",
                                           allowed: addressed.key != nil ? "GET, HEAD, PUT, POST, DELETE" : addressed.bucket != nil ? "GET, HEAD, PUT, POST, DELETE" : "GET")
        }
        label = name
        // A browser upload is signed by its form (its policy), not by its head: the
        // operation checks that signature before it stores any of the file.
        let authentication = operation == .postObject ? nil
            : try verifier.authenticate(method: head.method, rawTarget: head.target, headers: head.headers, now: Timestamp.now(),
                                        hostBucket: addressed.hostBucket)
        if operation == .unsupported { throw S3Error.notImplemented(name) }
        // Every request that names a bucket names one that could exist: the reserved
        // prefix (`_plugboard-s3`) and names with `/` are never buckets, whatever the operation.
        if let bucket = addressed.bucket, !bucket.isEmpty, operation != .createBucket {
            try S3Namespace.validateBucketName(bucket, creating: false)
        }
        if let refusal = provider.objectRequestsRefusal {
            throw S3Error.serviceUnavailable("The storage behind this endpoint is not ready: \(refusal.message). Retry once the plugin is fixed and reloaded.")
        }
        if let version = query.first(where: { $0.name == "versionId" })?.value, version != "null" {
            throw S3Error("NoSuchVersion", status: 404,
                          "The specified version does not exist: buckets here are unversioned, so the only version is \"null\"; found \"\(version.prefix(128))\".",
                          fields: [("VersionId", String(version.prefix(128)))])
        }
        let checksums = VerifiedChecksums()
        let bodyHeaders = operation.checksumHeadersDescribeBody ? head.headers : head.headers.withoutChecksumValues
        let body = try authentication.map { authentication throws(S3Error) in
            try S3BodyDecoder.body(request.body, headers: bodyHeaders, authentication: authentication, verified: checksums)
        } ?? ObjectBody(length: request.body.length, request.body)
        let lease = provider.container.lease()
        let storage: any ObjectStorage
        switch provider.boundStorage(lease) {
        case .success(let s): storage = s
        case .failure(let error):
            lease.release()
            logger.warning("S3 request refused: \(error.code): \(error.message)", metadata: ["request": .string(id)])
            throw S3Error.serviceUnavailable("No storage is bound behind this endpoint now (\(error.code)). Retry shortly.")
        }
        let s3 = S3Request(head: head, bucket: addressed.bucket, key: addressed.key, query: query, body: body,
                           requestID: id, accessKeyID: authentication?.accessKeyID ?? "", verifiedChecksums: checksums)
        var context = S3Context(storage: storage, logger: logger, region: configuration.region, buckets: buckets)
        context.pluginErrorMapping = pluginErrorMapping
        return Prepared(operation: operation, context: context, request: s3, lease: lease)
    }

    private func dispatch(_ operation: S3Operation, _ c: S3Context, _ r: S3Request) async throws -> HTTPResponse {
        switch operation {
        case .listBuckets: return try await BucketOperations.listBuckets(c, r)
        case .createBucket: return try await BucketOperations.createBucket(c, r)
        case .headBucket: return try await BucketOperations.headBucket(c, r)
        case .deleteBucket: return try await BucketOperations.deleteBucket(c, r)
        case .getBucketLocation: return try await BucketOperations.getBucketLocation(c, r)
        case .getBucketVersioning: return try await Self.getBucketVersioning(c, r)
        case .listObjects: return try await ListOperations.listObjectsV1(c, r)
        case .listObjectsV2: return try await ListOperations.listObjectsV2(c, r)
        case .listObjectVersions: return try await ListOperations.listObjectVersions(c, r)
        case .deleteObjects: return try await DeleteObjectsOperation.deleteObjects(c, r)
        case .putObject: return try await ObjectOperations.putObject(c, r)
        case .copyObject: return try await CopyObjectOperation.copyObject(c, r)
        case .getObject:
            if r.has("partNumber") { return try await MultipartOperations.getObjectPart(c, r) }
            return try await ObjectOperations.getObject(c, r)
        case .headObject:
            if r.has("partNumber") { return try await MultipartOperations.headObjectPart(c, r) }
            return try await ObjectOperations.headObject(c, r)
        case .getObjectAttributes: return try await GetObjectAttributesOperation.getObjectAttributes(c, r)
        case .deleteObject: return try await ObjectOperations.deleteObject(c, r)
        case .createMultipartUpload: return try await MultipartOperations.createMultipartUpload(c, r)
        case .uploadPart: return try await MultipartOperations.uploadPart(c, r)
        case .uploadPartCopy: return try await MultipartOperations.uploadPartCopy(c, r)
        case .completeMultipartUpload: return try await MultipartOperations.completeMultipartUpload(c, r)
        case .abortMultipartUpload: return try await MultipartOperations.abortMultipartUpload(c, r)
        case .listParts: return try await MultipartOperations.listParts(c, r)
        case .listMultipartUploads: return try await MultipartOperations.listMultipartUploads(c, r)
        // Signed by its form, which the operation checks with the endpoint's verifier.
        case .postObject: return try await PostObjectOperation.postObject(c, r, verifier: verifier, now: Timestamp.now())
        case .unsupported: throw S3Error.notImplemented("this operation")
        }
    }

    /// Buckets here are never versioned: tools ask before they delete one.
    static func getBucketVersioning(_ c: S3Context, _ r: S3Request) async throws -> HTTPResponse {
        try await S3Objects.requireBucket(c, r.bucket ?? "")
        let xml = S3XMLWriter(root: "VersioningConfiguration")
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/xml")], body: xml.finish())
    }

    /// Bucket and key from the path (`/bucket/key`), or the bucket from `Host` when it is
    /// `bucket.<domain>`. The path is split at its first `/` before it is decoded, so an
    /// encoded slash (`/a%2Fb`) stays in the bucket's name (and is refused there) instead
    /// of naming bucket `a` and key `b`; keys are decoded once; `/bucket/` names the bucket.
    static func address(_ head: RequestHead, domain: String?) throws(S3Error) -> Address {
        guard head.path.hasPrefix("/") else {
            throw S3Error("InvalidURI", status: 400, "Couldn't parse the specified URI: expected a path starting with '/', found \"\(head.path.prefix(64))\".")
        }
        let rest = head.path.dropFirst()
        if let domain, let host = head.headers["host"].map(hostWithoutPort), host.hasSuffix("." + domain) {
            let bucket = String(host.dropLast(domain.count + 1))
            return Address(bucket: bucket, key: rest.isEmpty ? nil : try decoded(rest), hostBucket: bucket)
        }
        guard !rest.isEmpty else { return Address(bucket: nil, key: nil) }
        guard let slash = rest.firstIndex(of: "/") else { return Address(bucket: try decoded(rest), key: nil) }
        let key = rest[rest.index(after: slash)...]
        return Address(bucket: try decoded(rest[..<slash]), key: key.isEmpty ? nil : try decoded(key))
    }

    /// A path segment percent-decoded, as UTF-8.
    private static func decoded(_ text: Substring) throws(S3Error) -> String {
        // A segment without escapes (the usual bucket and key) is its own text, already UTF-8.
        var segment = text
        if !segment.withUTF8({ $0.contains(UInt8(ascii: "%")) }) { return String(text) }
        let bytes: [UInt8]
        do throws(HTTPError) {
            bytes = try PercentDecoding.decode(text)
        } catch {
            throw S3Error("InvalidURI", status: 400, "Couldn't parse the specified URI: \(error.error.message).")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw S3Error("InvalidURI", status: 400, "Couldn't parse the specified URI: expected UTF-8 once decoded.")
        }
        return text
    }

    static func hostWithoutPort(_ host: String) -> String {
        if host.hasPrefix("[") { return host }
        guard let colon = host.lastIndex(of: ":") else { return host.lowercased() }
        return String(host[..<colon]).lowercased()
    }

    // MARK: errors

    private func errorResponse(_ error: any Error, head: RequestHead?, address: Address?, id: String) -> HTTPResponse {
        let s3: S3Error
        switch error {
        case let e as S3Error:
            s3 = e
        case let e as PlugboardError:
            let scrubbed = provider.secrets.scrub(e)
            logger.warning("S3 request failed in the storage: \(scrubbed.code): \(scrubbed.message)",
                           metadata: ["request": .string(id), "detail": .string(scrubbed.detail ?? "-")])
            var mapped = S3Error(storage: scrubbed, bucket: address?.bucket, key: address?.key,
                                 mapping: pluginErrorMapping(scrubbed.code))
            mapped.message = ServerPaths.scrubbed(mapped.message)
            s3 = mapped
        case let e as HTTPError:
            s3 = Self.s3Error(for: e)
        case is CancellationError:
            s3 = .serviceUnavailable("The request was cancelled: the client went away or the server is stopping.")
        default:
            logger.error("S3 request failed: \(error)", metadata: ["request": .string(id)])
            s3 = .internalError("We encountered an internal error. Please try again.")
        }
        var xml = S3XMLWriter(root: "Error", namespaced: false)
        xml.element("Code", s3.code)
        xml.element("Message", s3.message)
        for (name, value) in s3.fields { xml.element(name, value) }
        if let head { xml.element("Resource", String(head.path.prefix(1024))) }
        xml.element("RequestId", id)
        xml.element("HostId", id)
        return HTTPResponse(status: s3.status, headers: [("Content-Type", "application/xml")] + s3.headers, body: xml.finish())
    }

    /// The server's own refusals (a malformed head, a body too slow or too large) in S3's terms.
    static func s3Error(for error: HTTPError) -> S3Error {
        let text = error.error.message + (error.error.detail.map { ". " + $0 } ?? "")
        switch error.status {
        case 408: return S3Error("RequestTimeout", status: 400, "Your socket connection to the server was not read from or written to within the timeout period: \(text)")
        case 411: return .missingContentLength()
        case 413: return .entityTooLarge("Your proposed upload exceeds the maximum allowed size: \(text)")
        case 414: return S3Error("KeyTooLongError", status: 400, "Your key is too long: \(text)")
        case 431: return S3Error("RequestHeaderSectionTooLarge", status: 400, "Your request header section exceeds the maximum allowed size: \(text)")
        case 501: return S3Error("NotImplemented", status: 501, text)
        case 503: return .slowDown(text)
        default: return S3Error(error.status == 400 ? "BadRequest" : "InvalidRequest", status: error.status, text)
        }
    }

    // MARK: logs

    /// The operation of a finished exchange that carries no label (the server refused it
    /// before the router named it), from the target alone: path style, and no header
    /// (a copy counts as a put there).
    static func operationName(method: String, target: String) -> String {
        guard target != "-" else { return "-" }
        let question = target.firstIndex(of: "?")
        let path = question.map { target[..<$0] } ?? target[...]
        let query = question.map { target[target.index(after: $0)...] } ?? ""
        let names = Set(query.split(separator: "&").map { String($0.split(separator: "=", maxSplits: 1).first ?? "") })
        let segments = path.dropFirst().split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bucket = segments.first.flatMap { $0.isEmpty ? nil : String($0) }
        let key = segments.count > 1 && !segments[1].isEmpty ? String(segments[1]) : nil
        let identified = S3Operation.identify(method: method, bucket: bucket, key: key, query: names, copySource: false)
        return identified?.1 ?? "-"
    }

    static func milliseconds(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10_000).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// `x-amz-request-id`: 16 upper-case hexadecimal digits, unique in this process (a
/// random start, then a counter), so a client's report names one log line.
final class S3RequestIDs: Sendable {
    private let counter: LockedValueBox<UInt64>

    init() {
        var generator = SystemRandomNumberGenerator()
        counter = LockedValueBox(generator.next() & 0x00FF_FFFF_FFFF_FFFF)
    }

    func next() -> String {
        let n = counter.withLock { value -> UInt64 in
            value &+= 1
            return value
        }
        // Sixteen digits written in place: one per request, so no intermediate strings.
        return String(unsafeUninitializedCapacity: 16) { buffer in
            for i in 0..<16 {
                let digit = UInt8(truncatingIfNeeded: n >> (60 - 4 * i)) & 0xF
                buffer[i] = digit < 10 ? 0x30 + digit : 0x37 + digit
            }
            return 16
        }
    }
}

/// `plugboard_s3_requests_total{operation,status}` and
/// `plugboard_s3_request_duration_seconds{operation}`, beside the native API's counters and
/// histogram on `/metrics` (the same ``LatencyHistogram`` bounds).
public final class S3Metrics: Sendable {
    private struct Key: Hashable { var operation: String; var status: Int }
    private struct State {
        var counts: [Key: Int] = [:]
        var latency: [String: LatencyHistogram] = [:]
    }
    private let state = LockedValueBox(State())

    func record(operation: String, status: Int, seconds: Double) {
        state.withLock { s in
            s.counts[Key(operation: operation, status: status), default: 0] += 1
            s.latency[operation, default: LatencyHistogram()].record(seconds: seconds)
        }
    }

    /// The counters and histograms in Prometheus' text format. Operation names come from
    /// the router's fixed list (or `-`), so a client cannot grow the label set.
    public func render() -> String {
        let s = state.withLock { $0 }
        var out = "# HELP plugboard_s3_requests_total S3 requests answered, by operation and status.\n"
        out += "# TYPE plugboard_s3_requests_total counter\n"
        for (key, value) in s.counts.sorted(by: { ($0.key.operation, $0.key.status) < ($1.key.operation, $1.key.status) }) {
            out += "plugboard_s3_requests_total{operation=\"\(key.operation)\",status=\"\(key.status)\"} \(value)\n"
        }
        out += "# HELP plugboard_s3_request_duration_seconds Time from an S3 request's first byte to its answer written, by operation.\n"
        out += "# TYPE plugboard_s3_request_duration_seconds histogram\n"
        for (operation, h) in s.latency.sorted(by: { $0.key < $1.key }) {
            out += h.render("plugboard_s3_request_duration_seconds", label: "operation=\"\(operation)\"")
        }
        return out
    }
}
