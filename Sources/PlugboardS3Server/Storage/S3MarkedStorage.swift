import PlugboardAPI

/// The bound storage as the S3 front end's own calls reach it: each made with
/// `StorageCall.current` set to ``call``, so that the layers on the way can tell the
/// front end's records and the parts of uploads from the user's objects (PlugboardAPI 1.8,
/// docs/PLUGIN_GUIDE.md, "What flows through your layer"). A body a `get` returns is read
/// after the call has returned, outside the marking: a layer reads the marking when a
/// call begins.
struct S3MarkedStorage: ObjectStorage {
    let base: any ObjectStorage
    let call: StorageCall

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await StorageCall.with(call) { try await base.put(key, data: data, contentType: contentType, metadata: metadata) }
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await StorageCall.with(call) {
            try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
        }
    }

    func get(_ key: String) async throws -> StoredObject {
        try await StorageCall.with(call) { try await base.get(key) }
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try await StorageCall.with(call) { try await base.get(key, range: range) }
    }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        do {
            return try StorageCall.withoutWaiting(call) { try base.getWithoutWaiting(key, range: range) }
        } catch let error as PlugboardError {
            throw error
        } catch {
            throw PlugboardError(.storageFailed, "could not read \(PlugboardError.quoted(key))", underlying: error)
        }
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try await StorageCall.with(call) { try await base.head(key) }
    }

    func delete(_ key: String) async throws {
        try await StorageCall.with(call) { try await base.delete(key) }
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await StorageCall.with(call) { try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken) }
    }
}
