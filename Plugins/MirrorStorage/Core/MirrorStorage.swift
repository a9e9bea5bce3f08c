import PlugboardAPI

/// An `ObjectStorage` layer that moves a live store from the storage it wraps (the old
/// backend) to another plugin's (the new one) while serving it (docs/plugins/MirrorStorage.md).
///
/// - Writes go to both: a put to the new backend first, then the old one (which stays
///   complete, so dropping the mirror instead of the old backend loses nothing); a delete
///   from the old backend first, then the new one, so that no read falls back to an object
///   already deleted from the new one.
/// - Reads come from the new backend and fall back to the old one for a key the new one
///   does not have (not copied yet); a listing merges both, the new one's entry winning.
/// - A background ``MirrorCopier`` copies every object of the old backend the new one
///   lacks or has older; ``CopyFence`` keeps it from undoing a client's put or delete.
public final class MirrorStorage: ObjectStorage, ManagedService {
    let old: any ObjectStorage
    let new: any ObjectStorage
    let fence: CopyFence
    public let copier: MirrorCopier

    public init(old: any ObjectStorage, new: any ObjectStorage, from: String, configuration: MirrorConfiguration,
                plugin: String, logger: Logger) {
        self.old = old
        self.new = new
        let fence = CopyFence.shared([plugin, from, configuration.to, configuration.checkpoint].joined(separator: "\u{0}"))
        self.fence = fence
        self.copier = MirrorCopier(old: old, new: new, fence: fence, from: from, configuration: configuration,
                                   plugin: plugin, logger: logger)
    }

    /// Starts the copier; it runs until it has finished or the mirror stops.
    public func start() async throws {
        copier.start()
    }

    /// Stops the copier (its generation is retired), after the checkpoint of the last
    /// whole page.
    public func stop() async {
        await copier.stop()
    }

    public var progress: MirrorProgress { copier.progress }

    // MARK: Writes

    public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        await fence.clientWrites(key)
        let info = try await new.put(key, data: data, contentType: contentType, metadata: metadata)
        _ = try await old.put(key, data: data, contentType: contentType, metadata: metadata)
        return info
    }

    public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                    condition: WriteCondition) async throws -> ObjectInfo {
        // Checked before the condition is: a refused put reads nothing, in the contract's order.
        try ObjectKey.validate(key)
        _ = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        await fence.clientWrites(key)
        let info = try await new.put(key, body: body, contentType: contentType, metadata: metadata,
                                     condition: try await conditionForNew(key, condition))
        // The body is read once: the old backend gets the bytes the new one stored. Gone
        // already means a delete of the key followed, from both: nothing left to write.
        let stored: ObjectStream
        do {
            stored = try await new.get(key, range: nil)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return info
        }
        _ = try await old.put(key, body: stored.body, contentType: stored.info.contentType, metadata: stored.info.metadata,
                              condition: .none)
        return info
    }

    /// A condition is checked against what a reader sees: for a key only the old backend
    /// holds yet, that is the old object, which the new backend must not have either.
    private func conditionForNew(_ key: String, _ condition: WriteCondition) async throws -> WriteCondition {
        if case .none = condition { return condition }
        do {
            _ = try await new.head(key)
            return condition
        } catch let error as PlugboardError where error.code == .storageNotFound {
            let below: ObjectInfo
            do {
                below = try await old.head(key)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                return condition
            }
            switch condition {
            case .matches(let etag) where etag == below.etag:
                return .absent
            default:
                throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: true, currentETag: below.etag)
            }
        }
    }

    public func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        await fence.clientWrites(key)
        try await old.delete(key)
        try await new.delete(key)
    }

    // MARK: Reads

    public func get(_ key: String) async throws -> StoredObject {
        do {
            return try await new.get(key)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return try await old.get(key)
        }
    }

    public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        do {
            return try await new.get(key, range: range)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return try await old.get(key, range: range)
        }
    }

    public func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        do {
            return try new.getWithoutWaiting(key, range: range)
        } catch where error.code == .storageNotFound {
            return try old.getWithoutWaiting(key, range: range)
        }
    }

    public func head(_ key: String) async throws -> ObjectInfo {
        do {
            return try await new.head(key)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return try await old.head(key)
        }
    }

    public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await MergedListing(new: new, old: old).page(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
