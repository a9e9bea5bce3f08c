/// One page of a listing: what `list(prefix:limit:continuationToken:)` returns.
public struct ObjectListing: Sendable, Hashable, Codable {
    /// The objects of this page in ascending UTF-8 byte order of their keys; at most the
    /// page size asked for, possibly fewer even when more follow.
    ///
    /// Each entry's `key`, `size`, `etag` and `lastModified` are what `head` would return.
    /// `contentType` and `metadata` are filled only by backends that have them at no extra
    /// cost; others leave `application/octet-stream` and empty metadata. Call `head` for
    /// the authoritative values.
    public var objects: [ObjectInfo]
    /// The token that fetches the next page, or `nil` when this page is the last: no key
    /// matching the prefix follows the last one of this page.
    public var nextContinuationToken: String?

    /// Creates a page; backends build these, callers read them.
    public init(objects: [ObjectInfo], nextContinuationToken: String?) {
        self.objects = objects
        self.nextContinuationToken = nextContinuationToken
    }

    /// Whether more pages follow (``nextContinuationToken`` is not `nil`).
    public var isTruncated: Bool { nextContinuationToken != nil }
}
