/// What a storage knows about one object, without its data: what `head` returns, what
/// `put` returns, and one entry of a listing.
///
/// Equality compares ``key`` byte for byte (`"caf\u{E9}"` and `"cafe\u{301}"` are different
/// objects, though equal as Swift strings) and every other field as usual.
public struct ObjectInfo: Sendable, Hashable, Codable {
    /// The object's key, 1 to 1024 bytes of UTF-8 without NUL.
    public var key: String
    /// The size of the object's data in bytes.
    public var size: Int
    /// The lowercase hexadecimal MD5 of the object's data, 32 characters, without quotes.
    public var etag: String
    /// The content type given to `put`, or `application/octet-stream` when none was given.
    public var contentType: String
    /// When the object was last written, by the storage's clock.
    public var lastModified: Timestamp
    /// The user metadata given to `put`; see ``ObjectMetadata`` for the rules.
    public var metadata: [String: String]

    /// Creates object information; backends build these, callers read them.
    ///
    /// - Parameters:
    ///   - key: The object's key.
    ///   - size: The size of its data in bytes.
    ///   - etag: The lowercase hex MD5 of its data.
    ///   - contentType: Its content type; defaults to ``ObjectContentType/defaultValue``.
    ///   - lastModified: When it was last written.
    ///   - metadata: Its user metadata; defaults to none.
    public init(key: String, size: Int, etag: String,
                contentType: String = ObjectContentType.defaultValue,
                lastModified: Timestamp, metadata: [String: String] = [:]) {
        self.key = key
        self.size = size
        self.etag = etag
        self.contentType = contentType
        self.lastModified = lastModified
        self.metadata = metadata
    }

    /// Whether both describe the same object state: equal key bytes and equal fields.
    public static func == (lhs: ObjectInfo, rhs: ObjectInfo) -> Bool {
        ObjectKey.isSame(lhs.key, as: rhs.key)
            && lhs.size == rhs.size
            && lhs.etag == rhs.etag
            && lhs.contentType == rhs.contentType
            && lhs.lastModified == rhs.lastModified
            && lhs.metadata == rhs.metadata
    }

    /// Hashes the key's UTF-8 bytes and the other fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(key.utf8))
        hasher.combine(size)
        hasher.combine(etag)
        hasher.combine(contentType)
        hasher.combine(lastModified)
        hasher.combine(metadata)
    }
}
