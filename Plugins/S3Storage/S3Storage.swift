import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardHTTPClient
import PlugboardSigV4

/// ``ObjectStorage`` over the S3 REST API: PutObject, GetObject, HeadObject, DeleteObject
/// and ListObjectsV2, signed with SigV4, over URLSession.
///
/// ETags are the lowercase hex MD5 of the data, as the protocol wants. S3 reports exactly
/// that for single-part uploads without SSE-KMS; when a store answers a PUT with another
/// ETag, the object is written again with the MD5 in the metadata entry
/// ``md5MetadataKey``, which `head` and `get` read and hide.
final class S3Storage: ObjectStorage, ManagedService {
    /// The metadata entry that keeps the MD5 on stores whose ETag is not one.
    static let md5MetadataKey = "plugboard-md5"
    private static let metaPrefix = "x-amz-meta-"

    let configuration: S3Configuration
    let client: S3HTTPClient
    private let logger: Logger

    init(configuration: S3Configuration, logger: Logger, retry: RetryPolicy? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.client = S3HTTPClient(configuration: configuration, logger: logger, retry: retry)
    }

    // MARK: - ManagedService

    /// Asks S3 for the bucket (HeadBucket): a bucket that does not exist fails the load.
    /// A refusal (HEAD answers carry no error code, so a policy without s3:ListBucket
    /// looks the same as a wrong key) or an unreachable server only logs a warning: the
    /// object operations may still work, and they report their own errors.
    func start() async throws {
        let operation = S3Operation(kind: .headBucket, key: nil, bucket: configuration.bucket)
        do {
            _ = try await client.send(S3Request(method: "HEAD", key: nil), operation)
        } catch let error as PlugboardError where error.code == .storageAccessDenied {
            logger.warning("cannot check the bucket; continuing", metadata: ["bucket": .string(configuration.bucket), "error": .string(error.message)])
        } catch let error as PlugboardError where error.code == .storageUnavailable {
            logger.warning("S3 not reachable at start; continuing", metadata: ["endpoint": .string(configuration.endpoint.description), "error": .string(error.message)])
        }
    }

    func stop() async {
        client.shutdown()
    }

    // MARK: - ObjectStorage

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let contentType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        return try await putWhole(key, data, contentType, metadata, condition: .none)
    }

    /// Over `http://` with a known length over ``streamThreshold``, the body goes to S3 as
    /// it is read (PutObject with `UNSIGNED-PAYLOAD`, see
    /// ``streamedPut(_:_:_:_:length:condition:)``); a smaller body, one over `https://`,
    /// or one without a length is collected first, up to ``maxBufferedBodyBytes``, and sent
    /// whole with its Content-MD5, over a pooled keep-alive connection and with retries (a
    /// streamed upload has a connection of its own). Conditions travel as `If-None-Match: *`
    /// and `If-Match`, which S3 checks and applies atomically.
    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let contentType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        _ = try Self.conditionHeaders(key, condition)
        guard let length = body.length, client.streamsBodies, length > Self.streamThreshold else {
            let data = try await body.collect(upTo: Self.maxBufferedBodyBytes)
            return try await putWhole(key, data, contentType, metadata, condition: condition)
        }
        return try await streamedPut(key, body, contentType, metadata, length: length, condition: condition)
    }

    /// The object, or the part of it `range` selects, from GetObject (with a `Range`
    /// header for a range).
    ///
    /// Over `http://` a 2xx answer's body streams: it is read from the connection a piece
    /// at a time as the caller reads the ``ObjectStream``'s body (``S3HTTPClient/checkedBody(_:length:etag:_:)``), so
    /// neither a range nor a whole object is held in memory, and a whole object's MD5 is
    /// checked against its ETag before its last piece is handed over. Read whole instead,
    /// as `get(_:)` does: over `https://` (URLSession hands an answer over only whole), an
    /// object whose ETag is not an MD5 (written by another client as a multipart upload
    /// or with SSE-KMS: its MD5 must be known before its body to be its ETag), a chunked
    /// 200 without Content-Length, and the answer of a server that ignored the Range.
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        try range?.validate()
        guard range != nil || client.streamsBodies else { return try ObjectStream(try await get(key), key: key, range: nil) }
        // S3 reads "bytes=-0" as no range at all; here it selects nothing, as RFC 9110 says.
        if case .suffix(0) = range {
            throw PlugboardError.rangeNotSatisfiable(key: key, range: .suffix(0), size: try await head(key).size)
        }
        let operation = S3Operation(kind: .get, key: key, bucket: configuration.bucket)
        let headers = range.map { [("range", Self.rangeHeader($0))] } ?? []
        let response = try await client.send(S3Request(method: "GET", key: key, headers: headers), operation,
                                             streamingSuccess: true) { (200..<300).contains($0.status) || (range != nil && $0.status == 416) }
        if let range, response.status == 416 {
            var size = Self.completeLength(response.header("content-range"))
            if size == nil { size = try await head(key).size }
            throw PlugboardError.rangeNotSatisfiable(key: key, range: range, size: size ?? 0)
        }
        if let range, response.status == 206 {
            return try await rangeStream(key, range, response, operation)
        }
        if range == nil, let stream = response.stream, let length = stream.length, Self.etagIsMD5(response) {
            let info = try info(key, response, size: length, operation)
            let body = try client.checkedBody(stream, length: length, etag: info.etag, operation)
            return ObjectStream(info: info, range: nil, body: body)
        }
        let whole = try await collected(response, operation)
        guard let range else { return try ObjectStream(try checkedObject(whole, key, operation), key: key, range: nil) }
        // A server that ignored the Range header sent the whole object: slice it here.
        let info = try info(key, whole, size: whole.body.count, operation)
        return try ObjectStream(StoredObject(info: info, data: whole.body), key: key, range: range)
    }

    /// A 206 answer as the stream of the bytes `range` asked for, once its Content-Range
    /// (and its Content-Length, when it has one) says they are those bytes.
    private func rangeStream(_ key: String, _ range: ByteRange, _ response: S3Response,
                             _ operation: S3Operation) async throws -> ObjectStream {
        // nil for a chunked body, which the checked body holds to the range's length.
        let sent: Int? = if let stream = response.stream { stream.length } else { response.body.count }
        guard let (first, last, size) = Self.contentRange(response.header("content-range")), sent.map({ $0 == last - first + 1 }) ?? true,
              let expected = range.resolve(size: size), expected == first..<(last + 1) else {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: the ranged answer does not match the range asked",
                                 detail: "Expected bytes \(range) as RFC 9110 resolves them, found Content-Range \(response.header("content-range").map { PlugboardError.quoted($0) } ?? "none") with \(sent.map { "\($0) bytes" } ?? "a chunked body").",
                                 hint: "Check that \"endpoint\" is an S3-compatible server that supports ranged GetObject.")
        }
        var info = try info(key, response, size: size, operation)
        if !Self.etagIsMD5(response), let whole = try? await head(key) { info.etag = whole.etag }
        guard let stream = response.stream else { return ObjectStream(info: info, range: expected, body: ObjectBody(response.body)) }
        let body = try client.checkedBody(stream, length: expected.count, etag: nil, operation)
        return ObjectStream(info: info, range: expected, body: body)
    }

    /// `response` with the rest of its streamed body read into `body`.
    private func collected(_ response: S3Response, _ operation: S3Operation) async throws -> S3Response {
        guard let stream = response.stream else { return response }
        var whole = response
        whole.stream = nil
        do {
            while let chunk = try await stream.next() { whole.body += chunk }
        } catch let failure as TransportFailure {
            throw try client.bodyFailure(failure, operation, expected: stream.length, received: stream.bytesReceived)
        }
        return whole
    }

    /// The largest body collected in memory for a streamed put that cannot stream (an
    /// `https://` endpoint, or a body of unknown length): 1 GiB. Larger objects go over
    /// `http://` with a known length, or through the whole-object `put` (up to S3's 5 GiB).
    static let maxBufferedBodyBytes = 1 << 30
    /// The largest body sent whole even where it could stream: small enough to hold, and a
    /// whole PutObject rides a pooled keep-alive connection (a streamed one opens its own)
    /// and is retried; docs/BENCHMARKS.md measures the difference in front of radosgw.
    static let streamThreshold = 256 << 10

    /// PutObject with the whole body in hand: its Content-MD5 and SHA-256 signed.
    private func putWhole(_ key: String, _ data: [UInt8], _ contentType: String, _ metadata: [String: String],
                          condition: WriteCondition) async throws -> ObjectInfo {
        let md5 = try digest { () throws(CryptoError) in try MD5Hasher.hash(data) }
        let sha256 = try digest { () throws(CryptoError) in try SHA256Hasher.hash(data) }
        let etag = Hex.encode(md5)
        let operation = S3Operation(kind: .put, key: key, bucket: configuration.bucket)
        var request = putRequest(key, data, contentType, metadata, md5: md5, sha256: sha256)
        request.headers += try Self.conditionHeaders(key, condition)
        var response = try await client.send(request, operation, accept: Self.acceptsConditional(condition))
        try Self.checkCondition(response, key, condition)
        if Self.unquoted(response.header("etag")) != etag {
            // SSE-KMS and other stores whose ETag is not the MD5: keep the MD5 ourselves.
            var kept = metadata
            kept[Self.md5MetadataKey] = etag
            response = try await client.send(putRequest(key, data, contentType, kept, md5: md5, sha256: sha256), operation)
        }
        return ObjectInfo(key: key, size: data.count, etag: etag, contentType: contentType,
                          lastModified: Self.modified(response), metadata: metadata)
    }

    /// PutObject with the body sent as it is read, signed `UNSIGNED-PAYLOAD`.
    ///
    /// Why not SigV4's chunked signing (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`): it signs
    /// each chunk in a chain, but needs `aws-chunked` framing, which S3-compatible servers
    /// support unevenly, and it still cannot carry a Content-MD5 known only at the end.
    /// Integrity comes from the MD5 instead: computed as the chunks pass and compared with
    /// the ETag S3 answers (a store whose ETags are not MD5s gets the MD5 kept in metadata
    /// by a CopyObject of the object onto itself). The last chunk is held back until the
    /// body has ended with exactly its length, so a body that turns out longer than
    /// announced never completes the request: S3 stores a PUT only when all
    /// Content-Length bytes arrive, so a failed, short, long or cancelled body stores
    /// nothing.
    private func streamedPut(_ key: String, _ body: ObjectBody, _ contentType: String, _ metadata: [String: String],
                             length: Int, condition: WriteCondition) async throws -> ObjectInfo {
        let operation = S3Operation(kind: .put, key: key, bucket: configuration.bucket)
        var headers = [("content-type", contentType)] + metadata.map { (Self.metaPrefix + $0.key, $0.value) }
        headers += try Self.conditionHeaders(key, condition)
        let hasher = try digest { () throws(CryptoError) in try StreamingMD5.started() }
        let response = try await client.sendStreaming(S3Request(method: "PUT", key: key, headers: headers), length: length,
                                                      operation, accept: Self.acceptsConditional(condition)) { upload in
            var pending: [UInt8] = []
            try await body.forEachChunk(upTo: min(length, Self.maxObjectBytes)) { chunk in
                hasher.update(chunk)
                if pending.count >= Self.sendBytes {
                    try await upload.send(pending)
                    pending = []
                }
                pending += chunk
            }
            if !pending.isEmpty { try await upload.send(pending) }
        }
        try Self.checkCondition(response, key, condition)
        let etag = Hex.encode(try digest { () throws(CryptoError) in try hasher.finish() })
        var modified = Self.modified(response)
        if Self.unquoted(response.header("etag")) != etag {
            modified = try await keepMD5(key, etag: etag, contentType: contentType, metadata: metadata, operation)
        }
        return ObjectInfo(key: key, size: length, etag: etag, contentType: contentType, lastModified: modified, metadata: metadata)
    }

    /// S3's single-PUT limit: 5 GiB.
    static let maxObjectBytes = ObjectBody.wholeObjectLimit
    /// How much of a streamed body is gathered before each send: 256 KiB.
    static let sendBytes = 256 * 1024

    /// Copies the object onto itself with `etag` (its MD5) in the metadata entry
    /// ``md5MetadataKey``: what a streamed put does on a store whose ETag is not the MD5,
    /// since its body cannot be sent again. Returns the copy's modification time.
    private func keepMD5(_ key: String, etag: String, contentType: String, metadata: [String: String],
                         _ operation: S3Operation) async throws -> Timestamp {
        var headers = [("content-type", contentType), ("x-amz-metadata-directive", "REPLACE"),
                       ("x-amz-copy-source", "/" + configuration.bucket + "/" + S3URIEncoding.encodePath(key))]
        for (name, value) in metadata { headers.append((Self.metaPrefix + name, value)) }
        headers.append((Self.metaPrefix + Self.md5MetadataKey, etag))
        let response = try await client.send(S3Request(method: "PUT", key: key, headers: headers), operation)
        return Self.modified(response)
    }

    /// `If-None-Match: *` for `.absent`, `If-Match: "etag"` for `.matches`.
    ///
    /// - Throws: `storage.unsupported` for a condition this build does not know.
    static func conditionHeaders(_ key: String, _ condition: WriteCondition) throws(PlugboardError) -> [(String, String)] {
        switch condition {
        case .none: return []
        case .absent: return [("if-none-match", "*")]
        case .matches(let etag): return [("if-match", "\"" + etag + "\"")]
        @unknown default:
            throw PlugboardError.conditionUnsupported(
                key: key, condition: condition, backend: "S3Storage",
                hint: "Rebuild S3Storage against the PlugboardAPI that defines the condition, or write without it.")
        }
    }

    /// Which answers of a conditional PutObject are outcomes rather than errors: 412 (the
    /// condition failed), 409 (S3's ConditionalRequestConflict: a concurrent conditional
    /// write won), and for `If-Match` 404 (no object to match).
    static func acceptsConditional(_ condition: WriteCondition) -> (S3Response) -> Bool {
        { response in
            if (200..<300).contains(response.status) { return true }
            guard condition != .none else { return false }
            if response.status == 412 || response.status == 409 { return true }
            if case .matches = condition, response.status == 404,
               (try? S3ErrorBody.parse(response.body))?.code != "NoSuchBucket" { return true }
            return false
        }
    }

    /// Throws `storage.precondition_failed` for an answer of
    /// ``acceptsConditional(_:)`` that says the condition did not hold.
    static func checkCondition(_ response: S3Response, _ key: String, _ condition: WriteCondition) throws(PlugboardError) {
        guard !(200..<300).contains(response.status) else { return }
        throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: response.status != 404)
    }

    /// Last-Modified of an answer, else its Date, else now (whole seconds, as HEAD has).
    private static func modified(_ response: S3Response) -> Timestamp {
        response.header("last-modified").flatMap(Timestamp.init(httpDate:))
            ?? response.header("date").flatMap(Timestamp.init(httpDate:)) ?? wholeSecond(.now())
    }

    /// `bytes=first-last`, `bytes=first-`, `bytes=-count`.
    static func rangeHeader(_ range: ByteRange) -> String {
        switch range {
        case .closed(let first, let last): "bytes=\(first)-\(last)"
        case .from(let first): "bytes=\(first)-"
        case .suffix(let count): "bytes=-\(count)"
        }
    }

    /// First, last and complete length of `Content-Range: bytes first-last/size`.
    static func contentRange(_ header: String?) -> (Int, Int, Int)? {
        guard let header, header.hasPrefix("bytes ") else { return nil }
        let parts = header.dropFirst(6).split(separator: "/")
        guard parts.count == 2, let size = Int(parts[1]) else { return nil }
        let bounds = parts[0].split(separator: "-")
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first <= last, last < size else { return nil }
        return (first, last, size)
    }

    /// The complete length of a 416's `Content-Range: bytes */size`.
    static func completeLength(_ header: String?) -> Int? {
        guard let header, let slash = header.lastIndex(of: "/") else { return nil }
        return Int(header[header.index(after: slash)...])
    }

    func get(_ key: String) async throws -> StoredObject {
        try ObjectKey.validate(key)
        let operation = S3Operation(kind: .get, key: key, bucket: configuration.bucket)
        return try checkedObject(try await client.send(S3Request(method: "GET", key: key), operation), key, operation)
    }

    /// The object a whole GetObject answer holds, its length and MD5 checked.
    private func checkedObject(_ response: S3Response, _ key: String, _ operation: S3Operation) throws -> StoredObject {
        var info = try info(key, response, size: response.body.count, operation)
        if let length = response.header("content-length").flatMap(Int.init), length != response.body.count {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: the answer was cut short",
                                 detail: "S3 announced \(length) bytes and sent \(response.body.count).",
                                 hint: "Retry; if it keeps happening, check the network between this host and S3.")
        }
        let md5 = Hex.encode(try digest { () throws(CryptoError) in try MD5Hasher.hash(response.body) })
        guard Self.etagIsMD5(response) else {
            // Written by another client as a multipart upload or with SSE-KMS or SSE-C:
            // the store's ETag says nothing about the bytes, their MD5 is the ETag.
            info.etag = md5
            return StoredObject(info: info, data: response.body)
        }
        guard md5 == info.etag else { throw Self.etagMismatch(operation, etag: info.etag, count: response.body.count, md5: md5) }
        return StoredObject(info: info, data: response.body)
    }

    /// The error for `count` bytes whose MD5 is not the object's ETag.
    static func etagMismatch(_ operation: S3Operation, etag: String, count: Int, md5: String) -> PlugboardError {
        PlugboardError(.storageFailed, "\(operation.description) failed: the data does not match its ETag",
                       detail: "The object's ETag is \(etag); the \(count) bytes received hash to \(md5).",
                       hint: "Retry; if it keeps happening, the stored object or something in between is damaged.")
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let operation = S3Operation(kind: .head, key: key, bucket: configuration.bucket)
        let response = try await client.send(S3Request(method: "HEAD", key: key), operation)
        guard let size = response.header("content-length").flatMap(Int.init), size >= 0 else {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: no object size in the answer",
                                 detail: "Expected a Content-Length header with the object's size, found \(response.header("content-length").map { PlugboardError.quoted($0) } ?? "none").",
                                 hint: "Check that \"endpoint\" is an S3-compatible server.")
        }
        return try info(key, response, size: size, operation)
    }

    func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        let operation = S3Operation(kind: .delete, key: key, bucket: configuration.bucket)
        // S3 answers 204 for a missing key too; some compatible servers answer 404
        // NoSuchKey, which is success here (but a missing bucket is not).
        _ = try await client.send(S3Request(method: "DELETE", key: key), operation) { response in
            (200..<300).contains(response.status)
                || (response.status == 404 && (try? S3ErrorBody.parse(response.body))?.code != "NoSuchBucket")
        }
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try ListingRequest.validate(prefix: prefix, limit: limit)
        let tokens = try digest { () throws(CryptoError) in
            try S3ListingToken(secretAccessKey: configuration.credentials.secretAccessKey, bucket: configuration.bucket)
        }
        var query = [("list-type", "2"), ("max-keys", String(limit)), ("encoding-type", "url")]
        if !prefix.isEmpty { query.append(("prefix", prefix)) }
        if let continuationToken {
            guard let s3Token = try digest({ () throws(CryptoError) in try tokens.unwrap(continuationToken, prefix: prefix) }) else {
                throw PlugboardError(
                    .storageInvalidArgument, "invalid continuation token \(PlugboardError.quoted(continuationToken, maxCharacters: 40))",
                    detail: "This S3Storage did not issue the token for bucket \(PlugboardError.quoted(configuration.bucket)) and prefix \(PlugboardError.quoted(prefix)).",
                    hint: "Pass nil for the first page, then each page's nextContinuationToken with the same prefix.")
            }
            query.append(("continuation-token", s3Token))
        }
        let operation = S3Operation(kind: .list, key: prefix, bucket: configuration.bucket)
        let response = try await client.send(S3Request(method: "GET", key: nil, query: query), operation)
        let page: S3ListPage
        do {
            page = try S3ListPage.parse(response.body)
        } catch {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: the answer is not a listing",
                                 detail: "Expected a ListObjectsV2 <ListBucketResult> document; \(error.description).",
                                 hint: "Check that \"endpoint\" is an S3-compatible server that supports ListObjectsV2.")
        }
        var objects: [ObjectInfo] = []
        objects.reserveCapacity(page.entries.count)
        for entry in page.entries {
            guard let modified = Timestamp(iso8601: entry.lastModified) else {
                throw PlugboardError(.storageFailed, "\(operation.description) failed: unreadable LastModified",
                                     detail: "Expected an ISO 8601 time for key \(PlugboardError.quoted(entry.key)), found \(PlugboardError.quoted(entry.lastModified)).",
                                     hint: "Check that \"endpoint\" is an S3-compatible server.")
            }
            // ListObjectsV2 carries neither; a head per entry would make a page cost a
            // request per object, so the entry says it does not know them.
            objects.append(ObjectInfo(key: entry.key, size: entry.size, etag: Self.unquoted(entry.etag),
                                      lastModified: Self.wholeSecond(modified), unknown: [.contentType, .metadata]))
        }
        let next = try page.nextContinuationToken.map { token in
            try digest { () throws(CryptoError) in try tokens.wrap(token, prefix: prefix) }
        }
        return ObjectListing(objects: objects, nextContinuationToken: next)
    }

    // MARK: - Helpers

    private func putRequest(_ key: String, _ data: [UInt8], _ contentType: String, _ metadata: [String: String],
                            md5: [UInt8], sha256: [UInt8]) -> S3Request {
        var headers = [("content-type", contentType), ("content-md5", Base64.encode(md5))]
        for (name, value) in metadata {
            headers.append((Self.metaPrefix + name, value))
        }
        return S3Request(method: "PUT", key: key, headers: headers, body: data, payloadHash: Hex.encode(sha256))
    }

    /// What a HEAD or GET answer says about the object.
    private func info(_ key: String, _ response: S3Response, size: Int, _ operation: S3Operation) throws -> ObjectInfo {
        var metadata: [String: String] = [:]
        for (name, value) in response.headers where name.hasPrefix(Self.metaPrefix) {
            metadata[String(name.dropFirst(Self.metaPrefix.count))] = value
        }
        var etag = Self.unquoted(response.header("etag"))
        if let kept = metadata.removeValue(forKey: Self.md5MetadataKey), Self.isMD5(kept) {
            etag = kept
        }
        guard let modified = response.header("last-modified").flatMap(Timestamp.init(httpDate:)) else {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: unreadable Last-Modified",
                                 detail: "Expected an HTTP date in Last-Modified, found \(response.header("last-modified").map { PlugboardError.quoted($0) } ?? "none").",
                                 hint: "Check that \"endpoint\" is an S3-compatible server.")
        }
        return ObjectInfo(key: key, size: size, etag: etag,
                          contentType: response.header("content-type") ?? ObjectContentType.defaultValue,
                          lastModified: modified, metadata: metadata)
    }

    private func digest<T>(_ body: () throws(CryptoError) -> T) throws(PlugboardError) -> T {
        try Self.digest(body)
    }

    /// Runs a libcrypto computation, turning its failure into a storage error.
    static func digest<T>(_ body: () throws(CryptoError) -> T) throws(PlugboardError) -> T {
        do {
            return try body()
        } catch {
            throw PlugboardError(.storageFailed, "cannot compute a digest for S3", detail: error.description,
                                 hint: error.hint ?? "S3Storage needs OpenSSL's libcrypto.so.3 (Debian: apt-get install libssl3).")
        }
    }

    /// An ETag without the quotes HTTP puts around it, lowercased.
    static func unquoted(_ etag: String?) -> String {
        guard var text = etag else { return "" }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        return text.lowercased()
    }

    /// Whether the answer's ETag is the MD5 of the object's data: the one kept in
    /// metadata, or S3's own when it has MD5's shape (not `<hex>-<parts>` of a multipart
    /// upload) and the object is not encrypted with KMS or a customer key.
    static func etagIsMD5(_ response: S3Response) -> Bool {
        if let kept = response.header(metaPrefix + md5MetadataKey), isMD5(kept) { return true }
        let encryption = response.header("x-amz-server-side-encryption") ?? ""
        return isMD5(unquoted(response.header("etag"))) && !encryption.hasPrefix("aws:kms")
            && response.header("x-amz-server-side-encryption-customer-algorithm") == nil
    }

    static func isMD5(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// `timestamp` without its fraction: HEAD's Last-Modified has whole seconds, so a
    /// listing's time is cut to match.
    static func wholeSecond(_ timestamp: Timestamp) -> Timestamp {
        Timestamp(secondsSince1970: timestamp.seconds)
    }
}
