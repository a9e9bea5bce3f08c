import PlugboardAPI

/// An `ObjectStorage` layer that refuses a put which would take the bytes stored through
/// it (or the objects, or the bytes under a key prefix) past its limits, and passes
/// everything else to the storage below.
///
/// At start it lists the storage below and counts what is there, so a restart or a reload
/// does not reset the quota. Counting is per key: an overwrite replaces the old object's
/// size with the new one once it succeeds (while it runs, both count), a delete gives the
/// object's bytes back. Objects written below by someone else after the start are not
/// counted until the next start.
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

    /// Counts the objects already stored below, a page at a time.
    func start() async throws {
        var token: String?
        repeat {
            let page = try await inner.list(prefix: "", limit: 1000, continuationToken: token)
            for object in page.objects { ledger.found(object.key, size: object.size) }
            token = page.nextContinuationToken
        } while token != nil
        let usage = ledger.usage
        logger.info("quota counted", metadata: ["bytes": "\(usage.bytes)", "objects": "\(usage.objects)",
                                                "maxBytes": "\(ledger.limits.maxBytes)"])
    }

    func stop() async {}

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        let reservation = try ledger.reserve(key, bytes: data.count)
        do {
            let info = try await inner.put(key, data: data, contentType: contentType, metadata: metadata)
            ledger.commit(reservation, size: info.size)
            return info
        } catch {
            ledger.release(reservation)
            throw error
        }
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        let reservation = try ledger.reserve(key, bytes: body.length ?? 0)
        do {
            let info = try await inner.put(key, body: counted(body, reservation), contentType: contentType,
                                           metadata: metadata, condition: condition)
            ledger.commit(reservation, size: info.size)
            return info
        } catch {
            ledger.release(reservation)
            throw error
        }
    }

    /// A body of unknown length reserves its bytes as they arrive, and stops the put at
    /// the chunk that would pass a limit; a body of known length reserved them all at once.
    private func counted(_ body: ObjectBody, _ reservation: QuotaLedger.Reservation) -> ObjectBody {
        guard body.length == nil else { return body }
        let ledger = self.ledger
        return ObjectBody(length: nil) {
            // A new iterator continues where the last one stopped (ObjectBody's contract).
            var chunks = body.makeAsyncIterator()
            guard let chunk = try await chunks.next() else { return nil }
            try ledger.grow(reservation, by: chunk.count)
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
