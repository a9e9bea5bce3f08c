/// An object's information and its data: what `get` returns.
public struct StoredObject: Sendable, Hashable, Codable {
    /// The object's key, size, ETag, content type, modification time and metadata.
    public var info: ObjectInfo
    /// The object's data; `data.count == info.size`.
    public var data: [UInt8]

    /// Creates a stored object; backends build these, callers read them.
    public init(info: ObjectInfo, data: [UInt8]) {
        self.info = info
        self.data = data
    }
}
