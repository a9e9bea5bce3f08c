/// What a storage knows about one object, without its data: what `head` returns, what
/// `put` returns, and one entry of a listing.
///
/// A listing may not know every field: an S3 ListObjectsV2 page carries no content type and
/// no metadata. Such an entry names them in ``unknown`` (PlugboardAPI 1.3); its
/// ``contentType`` and ``metadata`` then hold the defaults, which plugins built against 1.0
/// read as before, and ``knownContentType`` and ``knownMetadata`` are `nil`.
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
    /// The fields this storage did not report (PlugboardAPI 1.3): empty for `head`, `put`
    /// and a listing that carries everything; `[.contentType, .metadata]` for an S3 listing.
    /// An ObjectInfo made with the 1.0 initializer has none.
    public var unknown: Fields

    /// Fields of an ``ObjectInfo`` a storage may not know (PlugboardAPI 1.3).
    public struct Fields: OptionSet, Sendable, Hashable, Codable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// ``ObjectInfo/contentType`` is the default, not the object's.
        public static var contentType: Fields { Fields(rawValue: 1 << 0) }
        /// ``ObjectInfo/metadata`` is empty, not the object's.
        public static var metadata: Fields { Fields(rawValue: 1 << 1) }
    }

    /// The content type, or `nil` when the storage did not report it (``unknown``).
    public var knownContentType: String? { unknown.contains(.contentType) ? nil : contentType }
    /// The user metadata, or `nil` when the storage did not report it (``unknown``).
    public var knownMetadata: [String: String]? { unknown.contains(.metadata) ? nil : metadata }

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
        self.unknown = []
    }

    /// Creates object information that says which fields the storage did not report
    /// (PlugboardAPI 1.3); a separate initializer, since a defaulted parameter added to the
    /// one above would change the symbol plugins built against 1.0 call.
    ///
    /// - Parameters:
    ///   - unknown: The fields not reported; their values are replaced by the defaults
    ///     (``ObjectContentType/defaultValue``, no metadata), whatever was passed.
    public init(key: String, size: Int, etag: String,
                contentType: String = ObjectContentType.defaultValue,
                lastModified: Timestamp, metadata: [String: String] = [:], unknown: Fields) {
        self.init(key: key, size: size, etag: etag,
                  contentType: unknown.contains(.contentType) ? ObjectContentType.defaultValue : contentType,
                  lastModified: lastModified, metadata: unknown.contains(.metadata) ? [:] : metadata)
        self.unknown = unknown
    }

    private enum CodingKeys: String, CodingKey {
        case key, size, etag, contentType, lastModified, metadata, unknown
    }

    /// Reads the encoded form; `unknown` may be missing (text written before 1.3).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(key: try c.decode(String.self, forKey: .key), size: try c.decode(Int.self, forKey: .size),
                  etag: try c.decode(String.self, forKey: .etag),
                  contentType: try c.decode(String.self, forKey: .contentType),
                  lastModified: try c.decode(Timestamp.self, forKey: .lastModified),
                  metadata: try c.decode([String: String].self, forKey: .metadata),
                  unknown: try c.decodeIfPresent(Fields.self, forKey: .unknown) ?? [])
    }

    /// Whether both describe the same object state: equal key bytes and equal fields.
    public static func == (lhs: ObjectInfo, rhs: ObjectInfo) -> Bool {
        ObjectKey.isSame(lhs.key, as: rhs.key)
            && lhs.size == rhs.size
            && lhs.etag == rhs.etag
            && lhs.contentType == rhs.contentType
            && lhs.lastModified == rhs.lastModified
            && lhs.metadata == rhs.metadata
            && lhs.unknown == rhs.unknown
    }

    /// Hashes the key's UTF-8 bytes and the other fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(key.utf8))
        hasher.combine(size)
        hasher.combine(etag)
        hasher.combine(contentType)
        hasher.combine(lastModified)
        hasher.combine(metadata)
        hasher.combine(unknown.rawValue)
    }
}
