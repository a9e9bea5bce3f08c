/// The S3 operations, named as AWS's API reference names them: what a request is, from
/// its method, whether it names a bucket and a key, and its subresources. The name labels
/// logs and metrics, and a 501 answer says which operation is not supported.
public enum S3Operation: String, Sendable, CaseIterable {
    case listBuckets = "ListBuckets"
    case createBucket = "CreateBucket"
    case headBucket = "HeadBucket"
    case deleteBucket = "DeleteBucket"
    case getBucketLocation = "GetBucketLocation"
    case getBucketVersioning = "GetBucketVersioning"
    case listObjects = "ListObjects"
    case listObjectsV2 = "ListObjectsV2"
    case listObjectVersions = "ListObjectVersions"
    case deleteObjects = "DeleteObjects"
    case putObject = "PutObject"
    case copyObject = "CopyObject"
    case getObject = "GetObject"
    case headObject = "HeadObject"
    case getObjectAttributes = "GetObjectAttributes"
    case deleteObject = "DeleteObject"
    case createMultipartUpload = "CreateMultipartUpload"
    case uploadPart = "UploadPart"
    case uploadPartCopy = "UploadPartCopy"
    case completeMultipartUpload = "CompleteMultipartUpload"
    case abortMultipartUpload = "AbortMultipartUpload"
    case listParts = "ListParts"
    case listMultipartUploads = "ListMultipartUploads"
    /// A browser upload: a `multipart/form-data` POST to the bucket, signed by its form.
    case postObject = "PostObject"
    /// A known S3 operation this endpoint does not serve (its name is in the 501).
    case unsupported = "Unsupported"

    /// Whether the request's `x-amz-checksum-*` values describe its body, which the body
    /// decoder then holds them to. A Complete's describe the object its parts make (the
    /// parts' checksum, checked by the operation), not its XML.
    public var checksumHeadersDescribeBody: Bool { self != .completeMultipartUpload }

    /// What `method` on `bucket`/`key` with the query's `names` is. `unsupported` comes
    /// with the AWS name of the operation refused; a method S3 has no operation for is
    /// `nil` (405).
    public static func identify(method: String, bucket: String?, key: String?, query names: Set<String>,
                                copySource: Bool) -> (S3Operation, String)? {
        func op(_ o: S3Operation) -> (S3Operation, String) { (o, o.rawValue) }
        func unsupported(_ name: String) -> (S3Operation, String) { (.unsupported, name) }
        // A subresource this endpoint does not serve decides before anything else: a
        // PUT ?acl is not a PutObject.
        if key != nil, method == "GET", names.contains("attributes") { return op(.getObjectAttributes) }
        let level = key != nil ? objectSubresources : bucketSubresources
        for name in names.sorted() {
            if let refused = level[name] {
                let verb = method == "GET" || method == "HEAD" ? "Get" : method == "DELETE" ? "Delete" : "Put"
                return unsupported(verb + refused)
            }
        }
        guard let bucket, !bucket.isEmpty else {
            return method == "GET" ? op(.listBuckets) : nil
        }
        if key == nil {
            switch method {
            case "GET":
                if names.contains("location") { return op(.getBucketLocation) }
                if names.contains("versioning") { return op(.getBucketVersioning) }
                if names.contains("uploads") { return op(.listMultipartUploads) }
                if names.contains("versions") { return op(.listObjectVersions) }
                return op(names.contains("list-type") ? .listObjectsV2 : .listObjects)
            case "HEAD": return op(.headBucket)
            case "PUT":
                if names.contains("versioning") { return unsupported("PutBucketVersioning") }
                return op(.createBucket)
            case "DELETE": return op(.deleteBucket)
            case "POST":
                if names.contains("delete") { return op(.deleteObjects) }
                return op(.postObject)
            default: return nil
            }
        }
        switch method {
        case "GET":
            if names.contains("uploadId") { return op(.listParts) }
            return op(.getObject)
        case "HEAD": return op(.headObject)
        case "PUT":
            if names.contains("uploadId") || names.contains("partNumber") {
                return op(copySource ? .uploadPartCopy : .uploadPart)
            }
            return op(copySource ? .copyObject : .putObject)
        case "DELETE":
            return op(names.contains("uploadId") ? .abortMultipartUpload : .deleteObject)
        case "POST":
            if names.contains("uploads") { return op(.createMultipartUpload) }
            if names.contains("uploadId") { return op(.completeMultipartUpload) }
            if names.contains("restore") { return unsupported("RestoreObject") }
            if names.contains("select") { return unsupported("SelectObjectContent") }
            return unsupported("PostObject")
        default:
            return nil
        }
    }

    /// Bucket subresources of operations not served, by query name, with the rest of the
    /// operation's AWS name (the verb comes from the method).
    static let bucketSubresources: [String: String] = [
        "accelerate": "BucketAccelerateConfiguration", "acl": "BucketAcl", "analytics": "BucketAnalyticsConfiguration",
        "cors": "BucketCors", "encryption": "BucketEncryption", "intelligent-tiering": "BucketIntelligentTieringConfiguration",
        "inventory": "BucketInventoryConfiguration", "lifecycle": "BucketLifecycleConfiguration", "logging": "BucketLogging",
        "metrics": "BucketMetricsConfiguration", "notification": "BucketNotificationConfiguration",
        "object-lock": "ObjectLockConfiguration", "ownershipControls": "BucketOwnershipControls", "policy": "BucketPolicy",
        "policyStatus": "BucketPolicyStatus", "publicAccessBlock": "PublicAccessBlock", "replication": "BucketReplication",
        "requestPayment": "BucketRequestPayment", "tagging": "BucketTagging", "website": "BucketWebsite",
        "session": "CreateSession", "metadataTable": "BucketMetadataTableConfiguration",
    ]

    static let objectSubresources: [String: String] = [
        "acl": "ObjectAcl", "attributes": "ObjectAttributes", "legal-hold": "ObjectLegalHold",
        "retention": "ObjectRetention", "tagging": "ObjectTagging", "torrent": "ObjectTorrent",
        "renameObject": "RenameObject",
    ]
}
