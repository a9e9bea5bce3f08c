import Foundation
import PlugboardAPI
import PlugboardCrypto

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

    init(configuration: S3Configuration, logger: Logger, retry: S3RetryPolicy? = nil) {
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
        let md5 = try digest { () throws(CryptoError) in try MD5Hasher.hash(data) }
        let sha256 = try digest { () throws(CryptoError) in try SHA256Hasher.hash(data) }
        let etag = Hex.encode(md5)
        let operation = S3Operation(kind: .put, key: key, bucket: configuration.bucket)
        var response = try await client.send(putRequest(key, data, contentType, metadata, md5: md5, sha256: sha256), operation)
        if Self.unquoted(response.header("etag")) != etag {
            // SSE-KMS and other stores whose ETag is not the MD5: keep the MD5 ourselves.
            var kept = metadata
            kept[Self.md5MetadataKey] = etag
            response = try await client.send(putRequest(key, data, contentType, kept, md5: md5, sha256: sha256), operation)
        }
        let modified = response.header("last-modified").flatMap(Timestamp.init(httpDate:))
            ?? response.header("date").flatMap(Timestamp.init(httpDate:)) ?? Self.wholeSecond(.now())
        return ObjectInfo(key: key, size: data.count, etag: etag, contentType: contentType, lastModified: modified, metadata: metadata)
    }

    func get(_ key: String) async throws -> StoredObject {
        try ObjectKey.validate(key)
        let operation = S3Operation(kind: .get, key: key, bucket: configuration.bucket)
        let response = try await client.send(S3Request(method: "GET", key: key), operation)
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
        guard md5 == info.etag else {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: the data does not match its ETag",
                                 detail: "The object's ETag is \(info.etag); the \(response.body.count) bytes received hash to \(md5).",
                                 hint: "Retry; if it keeps happening, the stored object or something in between is damaged.")
        }
        return StoredObject(info: info, data: response.body)
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
            objects.append(ObjectInfo(key: entry.key, size: entry.size, etag: Self.unquoted(entry.etag),
                                      lastModified: Self.wholeSecond(modified)))
        }
        let next = try page.nextContinuationToken.map { token in
            try digest { () throws(CryptoError) in try tokens.wrap(token, prefix: prefix) }
        }
        return ObjectListing(objects: objects, nextContinuationToken: next)
    }

    // MARK: - Helpers

    private func putRequest(_ key: String, _ data: [UInt8], _ contentType: String, _ metadata: [String: String],
                            md5: [UInt8], sha256: [UInt8]) -> S3Request {
        var headers = [("content-type", contentType), ("content-md5", Data(md5).base64EncodedString())]
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

    /// Runs a libcrypto computation, turning its failure into a storage error.
    private func digest<T>(_ body: () throws(CryptoError) -> T) throws(PlugboardError) -> T {
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
