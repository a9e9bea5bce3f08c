import PlugboardAPI

/// A test double over another storage: conform, keep the storage in ``base``, and write
/// only the methods the double changes (a listing that counts its pages, a put that
/// records its chunks); every other call goes to ``base`` as it is.
///
/// ```swift
/// final class CountingStorage: ForwardingStorage {
///     let base: any ObjectStorage = InMemoryObjectStorage()
///     let lists = Atomic<Int>(0)
///     func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
///         lists.add(1, ordering: .relaxed)
///         return try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
///     }
/// }
/// ```
public protocol ForwardingStorage: ObjectStorage {
    associatedtype Base: ObjectStorage
    /// The storage every call the double does not write goes to.
    var base: Base { get }
}

extension ForwardingStorage {
    public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    public func get(_ key: String) async throws -> StoredObject { try await base.get(key) }

    public func head(_ key: String) async throws -> ObjectInfo { try await base.head(key) }

    public func delete(_ key: String) async throws { try await base.delete(key) }

    public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }

    public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                    condition: WriteCondition) async throws -> ObjectInfo {
        try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream { try await base.get(key, range: range) }

    public func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try base.getWithoutWaiting(key, range: range)
    }
}
