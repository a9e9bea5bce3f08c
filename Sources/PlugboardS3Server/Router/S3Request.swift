import PlugboardAPI
import PlugboardHTTP

/// One S3 request as the operations see it: addressed (bucket and key taken from the
/// path, or from the host with `--s3-domain`), authenticated, its body decoded
/// (`aws-chunked` framing removed) and checked (signatures, `x-amz-content-sha256`,
/// `Content-MD5`, `x-amz-checksum-*`) as it is read: the body throws before its end when
/// a check fails, so a storage `put` over it stores nothing.
public struct S3Request: Sendable {
    public var head: RequestHead
    /// nil for the service (ListBuckets).
    public var bucket: String?
    /// The object's key inside the bucket, decoded; nil for a bucket-level request.
    public var key: String?
    /// The query's items, decoded, in order (a name without `=` has the empty value).
    public var query: [(name: String, value: String)]
    /// The content, as the client meant it (after `aws-chunked` decoding); its length is
    /// `x-amz-decoded-content-length` for `aws-chunked`, else `Content-Length`.
    public var body: ObjectBody
    /// Answered as `x-amz-request-id`, and in error documents.
    public var requestID: String
    /// The access key that signed the request.
    public var accessKeyID: String
    /// Filled by ``body`` once it has ended and its `x-amz-checksum-*` values matched.
    public var verifiedChecksums: VerifiedChecksums

    public init(head: RequestHead, bucket: String?, key: String?, query: [(name: String, value: String)],
                body: ObjectBody, requestID: String, accessKeyID: String,
                verifiedChecksums: VerifiedChecksums = VerifiedChecksums()) {
        self.head = head
        self.bucket = bucket
        self.key = key
        self.query = query
        self.body = body
        self.requestID = requestID
        self.accessKeyID = accessKeyID
        self.verifiedChecksums = verifiedChecksums
    }

    public var method: String { head.method }

    /// The first value of a query item, nil when absent.
    public func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the query names `name` (S3's subresources: `?uploads`, `?delete`, `?location`).
    public func has(_ name: String) -> Bool { query.contains { $0.name == name } }

    /// A header's value (names are lower-case), nil when absent.
    public func header(_ name: String) -> String? { head.headers[name] }
}

/// What an operation works with: the storage bound now, through the request's lease
/// (a hot swap takes effect on the next request, never in the middle of this one).
public struct S3Context: Sendable {
    public var storage: any ObjectStorage
    public var logger: Logger
    /// The region answered by GetBucketLocation and expected in signatures' scope.
    public var region: String
    /// The endpoint's one gate: orders DeleteBucket against the writes into the bucket.
    public var buckets: S3BucketGate
    /// The answer a plugin mapped one of its own codes to, for an error an operation
    /// answers itself (a key's `<Error>` in DeleteObjects); none by default.
    public var pluginErrorMapping: @Sendable (PlugboardError.Code) -> PlugboardError.Mapping? = { _ in nil }

    public init(storage: any ObjectStorage, logger: Logger, region: String, buckets: S3BucketGate) {
        self.storage = storage
        self.logger = logger
        self.region = region
        self.buckets = buckets
    }
}
