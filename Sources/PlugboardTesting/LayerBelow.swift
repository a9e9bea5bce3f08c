import PlugboardAPI
import PlugboardConcurrency

/// What reached the storage below a layer under test: the suite puts an
/// ``ObservingStorage`` between the layer and the storage it wraps, and the rule
/// `layer_keeps_reads_streamed` reads the calls it saw.
final class LayerBelow: Sendable {
    /// A read that reached the storage below.
    enum Read: Sendable, Hashable {
        /// `get(_:)`: the whole object, held in memory.
        case whole
        /// `get(_:range:)`, with its range.
        case ranged(ByteRange?)
        /// `getWithoutWaiting(_:range:)`, with its range.
        case atOnce(ByteRange?)
    }

    private let reads = LockedValueBox<[(key: String, read: Read)]>([])
    private let built = LockedValueBox<(any ObjectStorage)?>(nil)

    init() {}

    /// The storage below as it is, unobserved, once the layer's factory was handed it.
    var storage: (any ObjectStorage)? { built.withLock { $0 } }

    func observe(_ storage: any ObjectStorage) -> any ObjectStorage {
        built.withLock { $0 = storage }
        return ObservingStorage(base: storage, below: self)
    }

    func record(_ key: String, _ read: Read) {
        reads.withLock { $0.append((key, read)) }
    }

    /// The reads of `key` since the last call, and forgets them: a layer's own background
    /// work (a mirror's copier) reads other keys.
    func take(_ key: String) -> [Read] {
        reads.withLock { all in
            let mine = all.filter { ObjectKey.isSame($0.key, as: key) }.map(\.read)
            all.removeAll()
            return mine
        }
    }
}

/// Forwards every requirement to ``base`` as it is and records the reads in ``below``.
struct ObservingStorage: ObjectStorage {
    let base: any ObjectStorage
    let below: LayerBelow

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String) async throws -> StoredObject {
        below.record(key, .whole)
        return try await base.get(key)
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        below.record(key, .ranged(range))
        return try await base.get(key, range: range)
    }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        below.record(key, .atOnce(range))
        return try base.getWithoutWaiting(key, range: range)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await base.head(key) }

    func delete(_ key: String) async throws { try await base.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
