/// What a streaming `get` returns: the whole object's information and the body of the
/// bytes asked for, which the caller reads as they come.
///
/// ``info`` always describes the whole object (its `size` is the object's size, its ETag
/// the MD5 of all of its data), because that is what an HTTP answer's validators and
/// `Content-Range: bytes first-last/size` need; ``range`` says which part ``body`` holds.
public struct ObjectStream: Sendable {
    /// The information of the whole object, as `head` returns it.
    public var info: ObjectInfo
    /// The offsets of the bytes that ``body`` yields when a range was asked and is
    /// satisfiable (``ByteRange/resolve(size:)``); `nil` when no range was asked and
    /// ``body`` yields the whole object.
    public var range: Range<Int>?
    /// The bytes: `range.count` of them, or `info.size` when ``range`` is `nil`. Its
    /// ``ObjectBody/length`` says so too. Read it once.
    public var body: ObjectBody

    /// Creates a stream; backends build these, callers read them.
    public init(info: ObjectInfo, range: Range<Int>?, body: ObjectBody) {
        self.info = info
        self.range = range
        self.body = body
    }
}

extension ObjectStream {
    /// The part of a whole object that `range` selects, as a stream: for backends that
    /// hold objects in memory (and for the default ``ObjectStorage/get(_:range:)``).
    ///
    /// - Throws: `storage.range_not_satisfiable` when `range` selects no byte.
    public init(_ object: StoredObject, key: String, range: ByteRange?) throws(PlugboardError) {
        self.init(try ReadyObject(object, key: key, range: range))
    }
}
