import PlugboardAPI

/// An `ObjectStorage` layer that refuses a put which would take the bytes stored through
/// it (or the objects, or the bytes under a key prefix) past its limits, and passes
/// everything else to the storage below.
///
/// An object counts its data and its user metadata (the UTF-8 bytes of every key and
/// value, ``ObjectMetadata/byteCount(_:)``). At start it lists the storage below and
/// counts what is there, so a restart or a reload does not reset the quota. Counting is
/// per key: an overwrite replaces the old object's size with the new one once it
/// succeeds (while it runs, both count), a delete gives the object's bytes back. Objects
/// written below by someone else after the start are not counted until the next start.
///
/// What the S3 front end keeps for itself (`StorageCall`, PlugboardAPI 1.8): its records
/// pass through uncounted and never refused; a multipart upload's record is checked for
/// room for one more object (so a full quota refuses CreateMultipartUpload); each part
/// counts its bytes against `maxBytes` and the prefixes of the object it is for, but no
/// object slot, so the part that does not fit is refused, not the Complete after it; the
/// object that completes an upload is allowed the bytes of its parts, which the front end
/// deletes right after. A listing at start cannot tell records from parts: what it finds
/// under `StorageCall.frontEndPrefix` counts its bytes (against `maxBytes` only) until
/// it is deleted or written again.
final class QuotaStorage: ObjectStorage, ManagedService {
    /// The code of a refusal: the plugin's own (ERRORS.md, "Codes of the in-tree plugins").
    static let exceededCode: PlugboardError.Code = "quota.exceeded"

    private let inner: any ObjectStorage
    private let ledger: QuotaLedger
    private let logger: Logger

    init(inner: any ObjectStorage, limits: QuotaLimits, plugin: String, logger: Logger) {
        self.inner = inner
        self.ledger = QuotaLedger(limits: limits, plugin: plugin)
        self.logger = logger
    }

    /// Counts the objects already stored below, a page at a time; an entry whose listing
    /// leaves its metadata out is asked for it.
    func start() async throws {
        var token: String?
        repeat {
            let page = try await inner.list(prefix: "", limit: 1000, continuationToken: token)
            for object in page.objects {
                if ObjectKey.hasPrefix(object.key, StorageCall.frontEndPrefix) {
                    ledger.found(object.key, bytes: object.size, charge: .init(prefixKey: object.key, isObject: false))
                    continue
                }
                var metadata = object.knownMetadata
                if metadata == nil {
                    do {
                        metadata = try await inner.head(object.key).metadata
                    } catch let error as PlugboardError where error.code == .storageNotFound {
                        continue
                    }
                }
                ledger.found(object.key, bytes: object.size + ObjectMetadata.byteCount(metadata ?? [:]), charge: .object(object.key))
            }
            token = page.nextContinuationToken
        } while token != nil
        let usage = ledger.usage
        logger.info("quota counted", metadata: ["bytes": "\(usage.bytes)", "objects": "\(usage.objects)",
                                                "maxBytes": "\(ledger.limits.maxBytes)"])
    }

    func stop() async {}

    /// How a put counts, by what the front end says it is for; nil for a put that passes
    /// through uncounted (the front end's record).
    private func reservation(_ key: String, bytes: Int, metadata: [String: String]) throws(PlugboardError) -> QuotaLedger.Reservation? {
        let call = StorageCall.current
        let total = bytes + ObjectMetadata.byteCount(metadata)
        switch call.purpose {
        case .object:
            return try ledger.reserve(key, bytes: total, charge: .object(key), what: Self.what(key, call), allowingPartsOf: call.upload)
        case .part:
            let object = call.object ?? key
            return try ledger.reserve(key, bytes: total, charge: .init(prefixKey: object, isObject: false, upload: call.upload),
                                      what: Self.what(key, call))
        case .upload:
            let object = call.object ?? key
            try ledger.requireRoom(object, bytes: ObjectMetadata.byteCount(metadata),
                                   what: "multipart upload of \(PlugboardError.quoted(object))")
            return nil
        default:
            return nil
        }
    }

    /// What a refusal names: a put of the key, or a part of an upload of its object.
    private static func what(_ key: String, _ call: StorageCall) -> String {
        guard call.purpose == .part else { return "put of \(PlugboardError.quoted(key))" }
        return "part \(PlugboardError.quoted(key)) of an upload of \(PlugboardError.quoted(call.object ?? key))"
    }

    /// A put that passed through uncounted: a key found at start under the front end's
    /// prefix is no longer counted either, now that it is known to be a record.
    private func stored(_ info: ObjectInfo, _ reservation: QuotaLedger.Reservation?, metadata: [String: String]) -> ObjectInfo {
        if let reservation {
            ledger.commit(reservation, bytes: info.size + ObjectMetadata.byteCount(metadata))
        } else {
            ledger.deleted(info.key)
        }
        return info
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        let reservation = try reservation(key, bytes: data.count, metadata: metadata)
        do {
            return stored(try await inner.put(key, data: data, contentType: contentType, metadata: metadata), reservation, metadata: metadata)
        } catch {
            if let reservation { ledger.release(reservation) }
            throw error
        }
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        let reservation = try reservation(key, bytes: body.length ?? 0, metadata: metadata)
        do {
            let body = reservation.map { self.counted(body, $0, key: key) } ?? body
            return stored(try await inner.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition),
                          reservation, metadata: metadata)
        } catch {
            if let reservation { ledger.release(reservation) }
            throw error
        }
    }

    /// A body of unknown length reserves its bytes as they arrive, and stops the put at
    /// the chunk that would pass a limit; a body of known length reserved them all at once.
    private func counted(_ body: ObjectBody, _ reservation: QuotaLedger.Reservation, key: String) -> ObjectBody {
        guard body.length == nil else { return body }
        let ledger = self.ledger
        let what = Self.what(key, StorageCall.current)
        return ObjectBody(length: nil) {
            // A new iterator continues where the last one stopped (ObjectBody's contract).
            var chunks = body.makeAsyncIterator()
            guard let chunk = try await chunks.next() else { return nil }
            try ledger.grow(reservation, by: chunk.count, what: what)
            return chunk
        }
    }

    func get(_ key: String) async throws -> StoredObject {
        try await inner.get(key)
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try await inner.get(key, range: range)
    }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try inner.getWithoutWaiting(key, range: range)
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try await inner.head(key)
    }

    func delete(_ key: String) async throws {
        try await inner.delete(key)
        ledger.deleted(key)
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await inner.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
