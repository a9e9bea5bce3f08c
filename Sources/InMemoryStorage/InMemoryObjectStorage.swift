import PlugboardAPI
import PlugboardConcurrency
import PlugboardCrypto

/// An ``ObjectStorage`` that keeps every object in memory: the reference backend, for
/// tests and for running an application without a real store.
///
/// It follows every rule of the protocol's "Implementation requirements" and passes the
/// whole ``ObjectStorageConformance`` suite: keys are compared and ordered by their UTF-8
/// bytes, arguments are checked with PlugboardAPI's shared validators, the ETag is the MD5
/// of the data (computed with libcrypto), and listings use ``ListingRequest``'s
/// continuation tokens.
///
/// ```swift
/// let storage = InMemoryObjectStorage()
/// try container.register((any ObjectStorage).self) { _ in storage }
///
/// // in a test, with a clock you control:
/// let fixed = Timestamp(secondsSince1970: 1_700_000_000)
/// let storage = InMemoryObjectStorage(now: { fixed })
/// ```
///
/// Safe to use from many tasks at once: the objects live behind one lock, held only to
/// read or swap entries; hashing happens outside it.
public final class InMemoryObjectStorage: ObjectStorage {
    private struct State {
        /// Objects by the UTF-8 bytes of their keys (not by `String`, which would merge
        /// canonically equivalent keys).
        var objects: [[UInt8]: StoredObject] = [:]
        /// The same keys in ascending byte order, for listings.
        var sortedKeys: [[UInt8]] = []
    }

    private let state = LockedValueBox(State())
    private let now: @Sendable () -> Timestamp

    /// Creates an empty storage.
    ///
    /// - Parameter now: The clock that stamps `lastModified`; the system clock by default.
    public init(now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) {
        self.now = now
    }

    /// The number of objects stored.
    public var count: Int {
        state.withLock { $0.objects.count }
    }

    /// Removes every object.
    public func removeAll() {
        state.withLock { $0 = State() }
    }

    /// Stores `data` under `key`, replacing any object there.
    public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let resolvedType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        return try store(key, data: data, contentType: resolvedType, metadata: metadata, condition: .none)
    }

    /// Collects the body (it is memory: the bytes are held anyway, up to
    /// ``ObjectBody/wholeObjectLimit``), then checks `condition` and stores the object
    /// under the lock, in one step.
    public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                    condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let resolvedType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        // Not the check that counts (that one is under the lock, below): it only spares
        // reading a body that is going to be refused.
        let bytes = Array(key.utf8)
        let current = state.withLock { $0.objects[bytes]?.info.etag }
        if let failure = Self.conditionFailure(key, condition, currentETag: current) { throw failure }
        let data = try await body.collect(upTo: ObjectBody.wholeObjectLimit)
        return try store(key, data: data, contentType: resolvedType, metadata: metadata, condition: condition)
    }

    /// Returns the object under `key`, or the part of it that `range` selects, from one
    /// version of it.
    public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        try range?.validate()
        return try ObjectStream(try await get(key), key: key, range: range)
    }

    /// Answers every read at once: the objects are in memory, behind a lock held only to
    /// look one up.
    public func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try ObjectKey.validate(key)
        try range?.validate()
        let bytes = Array(key.utf8)
        guard let object = state.withLock({ $0.objects[bytes] }) else {
            throw PlugboardError.objectNotFound(key: key)
        }
        return try ReadyObject(object, key: key, range: range)
    }

    /// Hashes `data` and stores it when `condition` holds, checked under the lock that the
    /// store takes: atomic against every other put and delete.
    private func store(_ key: String, data: [UInt8], contentType: String, metadata: [String: String],
                       condition: WriteCondition) throws(PlugboardError) -> ObjectInfo {
        let etag: String
        do {
            etag = Hex.encode(try MD5Hasher.hash(data))
        } catch {
            throw PlugboardError(
                .storageFailed, "could not compute the ETag of object \(PlugboardError.quoted(key)): \(error.message)",
                detail: error.detail, hint: error.hint, underlying: error)
        }
        let info = ObjectInfo(key: key, size: data.count, etag: etag, contentType: contentType,
                              lastModified: now(), metadata: metadata)
        let bytes = Array(key.utf8)
        let object = StoredObject(info: info, data: data)
        try state.withLock { (state) throws(PlugboardError) in
            if let failure = Self.conditionFailure(key, condition, currentETag: state.objects[bytes]?.info.etag) {
                throw failure
            }
            if state.objects.updateValue(object, forKey: bytes) == nil {
                let index = Self.firstIndex(in: state.sortedKeys, notBefore: bytes)
                state.sortedKeys.insert(bytes, at: index)
            }
        }
        return info
    }

    /// The error of a put whose `condition` does not hold for an object whose ETag is
    /// `currentETag` (nil: no object), or nil when it holds.
    private static func conditionFailure(_ key: String, _ condition: WriteCondition, currentETag: String?) -> PlugboardError? {
        switch condition {
        case .none:
            return nil
        case .absent:
            guard let currentETag else { return nil }
            return .preconditionFailed(key: key, condition: condition, exists: true, currentETag: currentETag)
        case .matches(let etag):
            if currentETag == etag { return nil }
            return .preconditionFailed(key: key, condition: condition, exists: currentETag != nil, currentETag: currentETag)
        @unknown default:
            return .conditionUnsupported(key: key, condition: condition, backend: "InMemoryObjectStorage",
                                         hint: "Rebuild against the PlugboardAPI that defines the condition, or write without it.")
        }
    }

    /// Returns the object under `key`.
    public func get(_ key: String) async throws -> StoredObject {
        try ObjectKey.validate(key)
        let bytes = Array(key.utf8)
        guard let object = state.withLock({ $0.objects[bytes] }) else {
            throw PlugboardError.objectNotFound(key: key)
        }
        return object
    }

    /// Returns the information of the object under `key`.
    public func head(_ key: String) async throws -> ObjectInfo {
        try await get(key).info
    }

    /// Removes the object under `key`, if any.
    public func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        let bytes = Array(key.utf8)
        state.withLock { state in
            if state.objects.removeValue(forKey: bytes) != nil {
                let index = Self.firstIndex(in: state.sortedKeys, notBefore: bytes)
                if index < state.sortedKeys.count, state.sortedKeys[index] == bytes {
                    state.sortedKeys.remove(at: index)
                }
            }
        }
    }

    /// Returns one page of the keys starting with `prefix`, in UTF-8 byte order.
    public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        let request = try ListingRequest(prefix: prefix, limit: limit, continuationToken: continuationToken)
        let prefixBytes = Array(request.prefix.utf8)
        return state.withLock { state in
            let keys = state.sortedKeys
            var index = Self.firstIndex(in: keys, notBefore: prefixBytes)
            if let startAfter = request.startAfter {
                index = max(index, Self.firstIndex(in: keys, after: Array(startAfter.utf8)))
            }
            var objects: [ObjectInfo] = []
            while index < keys.count, objects.count < request.limit, keys[index].starts(with: prefixBytes) {
                if let object = state.objects[keys[index]] {
                    objects.append(object.info)
                }
                index += 1
            }
            var token: String?
            if index < keys.count, keys[index].starts(with: prefixBytes), let last = objects.last {
                token = ListingRequest.continuationToken(after: last.key)
            }
            return ObjectListing(objects: objects, nextContinuationToken: token)
        }
    }

    /// The index of the first key not before `bytes` (equal or after), by binary search.
    private static func firstIndex(in keys: [[UInt8]], notBefore bytes: [UInt8]) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = low + (high - low) / 2
            if keys[mid].lexicographicallyPrecedes(bytes) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The index of the first key strictly after `bytes`, by binary search.
    private static func firstIndex(in keys: [[UInt8]], after bytes: [UInt8]) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = low + (high - low) / 2
            if bytes.lexicographicallyPrecedes(keys[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
