/// An object's bytes already in hand: what ``ObjectStorage/getWithoutWaiting(_:range:)``
/// returns when a backend can answer a read at once.
///
/// Like ``ObjectStream``, ``info`` describes the whole object and ``range`` says which
/// part ``bytes`` holds; unlike it, the bytes are a value, read on the caller's thread
/// with nothing left to wait for.
public struct ReadyObject: Sendable {
    /// The information of the whole object, as `head` returns it.
    public var info: ObjectInfo
    /// The offsets of ``bytes`` when a range was asked (``ByteRange/resolve(size:)``);
    /// `nil` when no range was asked and ``bytes`` is the whole object.
    public var range: Range<Int>?
    /// The bytes: `range.count` of them, or `info.size` when ``range`` is `nil`.
    public var bytes: [UInt8]

    /// Creates a ready object; backends build these, callers read them.
    public init(info: ObjectInfo, range: Range<Int>?, bytes: [UInt8]) {
        self.info = info
        self.range = range
        self.bytes = bytes
    }

    /// The part of a whole object that `range` selects: for backends that hold objects in
    /// memory.
    ///
    /// - Throws: `storage.range_not_satisfiable` when `range` selects no byte.
    public init(_ object: StoredObject, key: String, range: ByteRange?) throws(PlugboardError) {
        guard let range else {
            self.init(info: object.info, range: nil, bytes: object.data)
            return
        }
        guard let offsets = range.resolve(size: object.data.count) else {
            throw PlugboardError.rangeNotSatisfiable(key: key, range: range, size: object.data.count)
        }
        let bytes = offsets.count == object.data.count ? object.data : Array(object.data[offsets])
        self.init(info: object.info, range: offsets, bytes: bytes)
    }
}

extension ObjectStream {
    /// A stream of bytes already read: what ``ObjectStorage/get(_:range:)`` returns for a
    /// read its backend could answer at once.
    public init(_ ready: ReadyObject) {
        self.init(info: ready.info, range: ready.range, body: ObjectBody(ready.bytes))
    }
}
