import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// What every operation on objects shares: how an object's S3 face (ETag, the headers S3
/// stores beside the content, user metadata) is kept in the storage's one metadata map,
/// and the bucket check.
///
/// S3 stores `Content-Disposition`, `Content-Encoding`, `Content-Language`,
/// `Cache-Control` and `Expires` with an object and answers them on GET and HEAD; the
/// storage has a content type and user metadata only, so these go into metadata under
/// ``S3Namespace/reservedMetadataPrefix`` and are never answered as `x-amz-meta-*`.
public enum S3Objects {
    /// The stored headers, by their lower-case names, and the metadata key each is kept under.
    public static let storedHeaders: [(header: String, metadataKey: String)] = [
        ("cache-control", "plugboard-s3-cache-control"),
        ("content-disposition", "plugboard-s3-content-disposition"),
        ("content-encoding", "plugboard-s3-content-encoding"),
        ("content-language", "plugboard-s3-content-language"),
        ("expires", "plugboard-s3-expires"),
    ]
    /// The answers' names for the stored headers, in the order above.
    static let storedHeaderNames = ["Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"]

    /// The ETag S3 answers, quoted: the multipart one when the object was completed from
    /// parts, else the storage's (the content's MD5 for every in-tree backend).
    public static func etag(_ info: ObjectInfo) -> String {
        "\"" + (info.metadata[S3Namespace.multipartETagKey] ?? info.etag) + "\""
    }

    /// The user's metadata without the front end's own entries.
    public static func userMetadata(_ info: ObjectInfo) -> [(String, String)] {
        info.metadata.filter { !$0.key.hasPrefix(S3Namespace.reservedMetadataPrefix) }
            .sorted { $0.key < $1.key }
    }

    static let lastFormatted = TimestampTexts()

    /// The headers of a GET or HEAD answer for `info` (no length, no range).
    public static func headers(for info: ObjectInfo) -> [(String, String)] {
        var headers: [(String, String)] = []
        // Room for a range, the overrides and the request ID the router adds.
        headers.reserveCapacity(10 + info.metadata.count)
        headers.append(("Content-Type", info.contentType))
        headers.append(("ETag", etag(info)))
        headers.append(("Last-Modified", lastFormatted.text(of: info.lastModified).http))
        headers.append(("Accept-Ranges", "bytes"))
        if info.metadata.isEmpty { return headers }
        for (i, stored) in storedHeaders.enumerated() {
            if let value = info.metadata[stored.metadataKey] { headers.append((storedHeaderNames[i], value)) }
        }
        for (name, value) in userMetadata(info) { headers.append(("x-amz-meta-" + name, value)) }
        return headers
    }

    /// The metadata to store for a new object from its request headers: `x-amz-meta-*`
    /// (the storage's rules: keys of `[a-z0-9-]`, printable ASCII values, 2 KiB in all;
    /// S3 allows more, docs/S3_API.md lists it) and the stored headers.
    public static func metadata(fromHeaders headers: [(name: String, value: String)]) throws(S3Error) -> [String: String] {
        var metadata: [String: String] = [:]
        var contentEncoding: String?
        for field in headers {
            if field.name.hasPrefix("x-amz-meta-") {
                let key = String(field.name.dropFirst("x-amz-meta-".count))
                guard !key.hasPrefix(S3Namespace.reservedMetadataPrefix) else {
                    throw .invalidArgument("Metadata keys starting with \(S3Namespace.reservedMetadataPrefix) are kept by the server itself: found x-amz-meta-\(key).",
                                           name: "x-amz-meta-\(key)")
                }
                let value = mailSafe(field.value)
                if let earlier = metadata[key] {
                    metadata[key] = earlier + "," + value
                } else {
                    metadata[key] = value
                }
            } else if field.name == "content-encoding" {
                // A list (RFC 9110), so repeated fields are one value, as HTTP joins them.
                contentEncoding = contentEncoding.map { $0 + "," + field.value } ?? field.value
            } else if let stored = storedHeaders.first(where: { $0.header == field.name }) {
                metadata[stored.metadataKey] = field.value
            }
        }
        if let contentEncoding, let stored = storedContentEncoding(contentEncoding) {
            metadata[contentEncodingKey] = stored
        }
        do throws(PlugboardError) {
            try ObjectMetadata.validate(metadata)
        } catch {
            throw .invalidArgument("The metadata is not one the storage takes: \(error.message). \(error.detail ?? "") Keys are lower-case letters, digits and '-'; values printable ASCII; 2 KiB in all.",
                                   name: "x-amz-meta-*")
        }
        return metadata
    }

    /// Puts `checksum` into `metadata` when the storage can keep it there (the metadata's
    /// 2 KiB leave room); false when it cannot, and the checksum is to be kept beside.
    static func keep(_ checksum: S3Checksum, in metadata: inout [String: String]) -> Bool {
        var with = metadata
        with[S3Checksum.metadataKey] = checksum.stored
        do throws(PlugboardError) {
            try ObjectMetadata.validate(with)
        } catch {
            return false
        }
        metadata = with
        return true
    }

    /// A metadata value as AWS answers it: as it is when it is US-ASCII, else one RFC 2047
    /// encoded word (`=?UTF-8?B?...?=`), which is also what the storage can keep (printable
    /// ASCII). AWS decodes such a value before storing it and encodes it again for every
    /// answer, so answering the encoded form is the same to a client.
    static func mailSafe(_ value: String) -> String {
        guard !value.utf8.allSatisfy({ $0 < 0x80 }) else { return value }
        return "=?UTF-8?B?" + Base64.encode(Array(value.utf8)) + "?="
    }

    static let contentEncodingKey = "plugboard-s3-content-encoding"

    /// The `Content-Encoding` an object keeps from its request's: the list without
    /// `aws-chunked`, which names the transfer's framing (the body decoder removes it),
    /// not a coding of the content, so S3 stores `gzip` for `gzip, aws-chunked`; nil when
    /// nothing else is left. A list without `aws-chunked` is kept as sent.
    static func storedContentEncoding(_ value: String) -> String? {
        let codings = value.split(separator: ",", omittingEmptySubsequences: false)
            .map { ASCIIText.trimmed($0) }
        guard codings.contains(where: { $0.lowercased() == "aws-chunked" }) else { return value }
        let kept = codings.filter { !$0.isEmpty && $0.lowercased() != "aws-chunked" }
        return kept.isEmpty ? nil : kept.joined(separator: ", ")
    }

    /// `LastModified` in listings: ISO 8601 with milliseconds, as S3 writes it.
    public static func listingTime(_ timestamp: Timestamp) -> String { timestamp.iso8601 }

    /// Throws `NoSuchBucket` unless the bucket exists (``bucketExists(_:_:)``).
    public static func requireBucket(_ context: S3Context, _ bucket: String) async throws {
        guard try await bucketExists(context, bucket) else { throw S3Error.noSuchBucket(bucket) }
    }

    /// Whether the bucket exists, trusting for a second a bucket this endpoint found in the
    /// same storage (``S3BucketGate``), so that a request through S3Storage costs the
    /// backend one request, not two. A DeleteBucket through the endpoint ends the trust
    /// when it begins; a marker another process removes may go unseen for that second.
    public static func bucketExists(_ context: S3Context, _ bucket: String) async throws -> Bool {
        if context.buckets.recentlySeen(bucket, in: context.storage) { return true }
        let mark = context.buckets.mark()
        guard try await markerExists(context, bucket) else { return false }
        context.buckets.noteSeen(bucket, in: context.storage, since: mark)
        return true
    }

    /// Whether the bucket's marker is in the bound storage, asked now.
    public static func markerExists(_ context: S3Context, _ bucket: String) async throws -> Bool {
        do {
            _ = try await context.records.head(S3Namespace.markerKey(bucket: bucket))
            return true
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return false
        }
    }

    /// Runs `body`, a write into `bucket`, through the endpoint's ``S3BucketGate``, with the
    /// bucket's marker checked inside it (`NoSuchBucket`), so that a DeleteBucket either
    /// sees what `body` stores or makes it fail; through another endpoint over the same
    /// storage too, by looking at the marker again once what `body` notes as landed is
    /// stored (``S3BucketFence``).
    public static func writing<R>(into bucket: String, _ context: S3Context, _ body: (S3LandedWrites) async throws -> R) async throws -> R {
        try await context.buckets.write(into: bucket) {
            try await requireBucket(context, bucket)
            let landed = S3LandedWrites()
            let result = try await body(landed)
            let stored = landed.all
            if !stored.isEmpty { try await S3BucketFence.confirm(context, bucket, landed: stored) }
            return result
        }
    }

    /// The storage key of `key` in `bucket`; `KeyTooLongError` when the two together are
    /// over the storage's 1,024 bytes.
    public static func storageKey(bucket: String, key: String) throws(S3Error) -> String {
        guard !key.isEmpty else { throw .invalidArgument("An object key must not be empty.", name: "key") }
        let limit = S3Namespace.maxKeyBytes(bucket: bucket)
        guard key.utf8.count <= limit else {
            throw .keyTooLong("Your key is too long: expected at most \(limit) bytes (the storage holds 1,024 bytes for bucket name, '/' and key together), found \(key.utf8.count).")
        }
        guard !key.utf8.contains(0) else { throw .invalidArgument("An object key must not contain NUL.", name: "key") }
        return S3Namespace.objectKey(bucket: bucket, key: key)
    }
}
