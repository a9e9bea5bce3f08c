import PlugboardAPI

/// One ObjectStorage call as S3 sees it, for messages: `get of key "a" in bucket "b"`.
struct S3Operation: Sendable {
    enum Kind: String, Sendable {
        case put, get, head, delete, list
        case headBucket = "check of bucket"
    }

    var kind: Kind
    /// The object key, or the listing's prefix for `list`.
    var key: String?
    var bucket: String

    var description: String {
        switch kind {
        case .list: "list of prefix \(PlugboardError.quoted(key ?? "")) in bucket \(PlugboardError.quoted(bucket))"
        case .headBucket: "check of bucket \(PlugboardError.quoted(bucket))"
        default: "\(kind.rawValue) of key \(PlugboardError.quoted(key ?? "")) in bucket \(PlugboardError.quoted(bucket))"
        }
    }
}
