import PlugboardAPI
import PlugboardConcurrency
import PlugboardCrypto

/// What one rule works with: the storage, its own key prefix, and helpers that turn every
/// surprise into a ``ConformanceCheckFailure`` saying what was expected and what was found.
///
/// Every key the rule writes through ``put(_:_:contentType:metadata:)`` is remembered and
/// deleted by ``cleanUp()`` when the rule ends.
struct ConformanceContext: Sendable {
    let storage: any ObjectStorage
    let options: ObjectStorageConformance.Options
    /// `<keyPrefix>-<run>-<rule>`: no key of another rule or run starts with it.
    let base: String
    /// What reaches the storage below, when ``storage`` is a layer the suite observes.
    let below: LayerBelow?
    private let written = LockedValueBox<[[UInt8]: String]>([:])
    private let saved = LockedValueBox<[StoredObject]>([])

    init(storage: any ObjectStorage, options: ObjectStorageConformance.Options, base: String, below: LayerBelow? = nil) {
        self.storage = storage
        self.options = options
        self.base = base
        self.below = below
    }

    /// `<base>/<suffix>`.
    func key(_ suffix: String) -> String { base + "/" + suffix }

    /// Shows a key in a reason, with the rule's own prefix (``base``) written `<prefix>`:
    /// `"<prefix>/never-written"`.
    func show(_ key: String) -> String {
        guard ObjectKey.hasPrefix(key, base) else { return ConformanceText.quote(key) }
        let rest = String(decoding: key.utf8.dropFirst(base.utf8.count), as: UTF8.self)
        return "\"<prefix>" + ConformanceText.quote(rest).dropFirst()
    }

    /// An ETag without surrounding quotes and in lower case, for the rules that check that
    /// an ETag belongs to the data rather than how it is written (`etag_is_md5_hex` checks
    /// that).
    func normalizedETag(_ etag: String) -> String {
        var text = Substring(etag)
        if text.count >= 2, text.first == "\"", text.last == "\"" {
            text = text.dropFirst().dropLast()
        }
        return text.lowercased()
    }

    // MARK: Operations that fail the rule when the storage throws

    @discardableResult
    func put(_ key: String, _ data: [UInt8], contentType: String? = nil,
             metadata: [String: String] = [:]) async throws -> ObjectInfo {
        track(key)
        do {
            return try await storage.put(key, data: data, contentType: contentType, metadata: metadata)
        } catch {
            throw ConformanceCheckFailure("put of key \(show(key)) (\(data.count) bytes) failed with \(ConformanceText.describe(error))")
        }
    }

    func get(_ key: String) async throws -> StoredObject {
        do {
            return try await storage.get(key)
        } catch {
            throw ConformanceCheckFailure("get of key \(show(key)) failed with \(ConformanceText.describe(error))")
        }
    }

    func head(_ key: String) async throws -> ObjectInfo {
        do {
            return try await storage.head(key)
        } catch {
            throw ConformanceCheckFailure("head of key \(show(key)) failed with \(ConformanceText.describe(error))")
        }
    }

    func delete(_ key: String) async throws {
        do {
            try await storage.delete(key)
        } catch {
            throw ConformanceCheckFailure("delete of key \(show(key)) failed with \(ConformanceText.describe(error))")
        }
    }

    func list(prefix: String, limit: Int, token: String?) async throws -> ObjectListing {
        do {
            return try await storage.list(prefix: prefix, limit: limit, continuationToken: token)
        } catch {
            let tokenText = token.map(show) ?? "nil"
            throw ConformanceCheckFailure("list of prefix \(show(prefix)) with limit \(limit) and token \(tokenText) failed with \(ConformanceText.describe(error))")
        }
    }

    /// Every page of a listing, checking on the way that no page is larger than `limit`
    /// and that a token repeats nowhere.
    func listAll(prefix: String, limit: Int = 1000) async throws -> [ObjectInfo] {
        var all: [ObjectInfo] = []
        var token: String?
        var seen: Set<String> = []
        var pages = 0
        repeat {
            let page = try await list(prefix: prefix, limit: limit, token: token)
            pages += 1
            if page.objects.count > limit {
                throw ConformanceCheckFailure("list of prefix \(show(prefix)) with limit \(limit): expected at most \(limit) objects on page \(pages), found \(page.objects.count)")
            }
            all += page.objects
            token = page.nextContinuationToken
            if let token, !seen.insert(token).inserted {
                throw ConformanceCheckFailure("list of prefix \(show(prefix)) with limit \(limit): expected a new continuation token on page \(pages), found the token \(show(token)) again")
            }
            if pages > 10_000 {
                throw ConformanceCheckFailure("list of prefix \(show(prefix)) with limit \(limit): expected the listing to end, found more than 10000 pages")
            }
        } while token != nil
        return all
    }

    // MARK: Expectations

    /// Fails unless `condition` holds.
    func expect(_ condition: Bool, _ reason: @autoclosure () -> String) throws {
        if !condition { throw ConformanceCheckFailure(reason()) }
    }

    /// Fails unless `found == expected`, saying both.
    func expectEqual<T: Equatable>(_ found: T, _ expected: T, _ what: @autoclosure () -> String) throws {
        if found != expected {
            throw ConformanceCheckFailure("\(what()): expected \(expected), found \(found)")
        }
    }

    /// Fails unless `operation` throws a ``PlugboardError`` with `code`.
    func expectError(_ code: PlugboardError.Code, _ what: @autoclosure () -> String,
                     _ operation: () async throws -> Void) async throws {
        do {
            try await operation()
        } catch let error as PlugboardError {
            if error.code == code { return }
            throw ConformanceCheckFailure("\(what()): expected \(code), found \(ConformanceText.describe(error))")
        } catch {
            throw ConformanceCheckFailure("\(what()): expected \(code), found \(ConformanceText.describe(error))")
        }
        throw ConformanceCheckFailure("\(what()): expected \(code), found success")
    }

    /// Fails unless `head` of `key` reports `storage.not_found`: the key holds nothing.
    func expectAbsent(_ key: String, _ why: @autoclosure () -> String) async throws {
        try await expectError(.storageNotFound, "head of key \(show(key)) \(why())") {
            _ = try await storage.head(key)
        }
    }

    /// Fails unless `get` returns exactly `data` under `key`, with info consistent with it.
    func expectStored(_ key: String, _ data: [UInt8]) async throws {
        let object = try await get(key)
        try expect(ObjectKey.isSame(object.info.key, as: key),
                   "get of key \(show(key)): expected info.key to be the same bytes, found \(show(object.info.key))")
        try expect(object.data == data,
                   "get of key \(show(key)): expected the \(data.count) bytes written, found \(object.data.count) bytes\(object.data.count == data.count ? " with different content" : "")")
        try expectEqual(object.info.size, data.count, "get of key \(show(key)): info.size")
        try expectEqual(normalizedETag(object.info.etag), try md5Hex(data), "get of key \(show(key)): info.etag (quotes and case aside)")
    }

    /// The ETag every backend must report for `data`.
    func md5Hex(_ data: [UInt8]) throws -> String {
        do {
            return Hex.encode(try MD5Hasher.hash(data))
        } catch {
            throw ConformanceCheckFailure("the suite could not compute an MD5 to compare ETags with: \(error.message)")
        }
    }

    /// Deterministic bytes that differ for each `seed`.
    func bytes(_ count: Int, seed: Int) -> [UInt8] {
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 0xD1B5_4A32_D192_ED03
        let words = (max(count, 0) + 7) / 8
        var out = [UInt8](repeating: 0, count: words * 8)
        out.withUnsafeMutableBytes { buffer in
            for index in 0..<words {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                buffer.storeBytes(of: state.littleEndian, toByteOffset: index * 8, as: UInt64.self)
            }
        }
        out.removeLast(words * 8 - max(count, 0))
        return out
    }

    /// Seconds from `start` to `end`, negative when `end` is earlier; computed from the
    /// parts so that neither overflow nor a `Double`'s precision at present-day magnitudes
    /// blurs it, whatever the storage returned.
    func seconds(from start: Timestamp, to end: Timestamp) -> Double {
        (Double(end.seconds) - Double(start.seconds)) + Double(end.nanoseconds - start.nanoseconds) / 1e9
    }

    // MARK: Cleanup

    /// Remembers `key` for ``cleanUp()``; rules call it before a `put` that should be
    /// refused, so that a backend that stores it anyway leaves nothing behind.
    func track(_ key: String) {
        written.withLock { $0[Array(key.utf8)] = key }
    }

    /// Keeps the object now under `key`, if any, so that ``cleanUp()`` puts it back: for
    /// the exact keys (such as `..`) that a shared store may already hold.
    func preserve(_ key: String) async {
        if let object = try? await storage.get(key) {
            saved.withLock { $0.append(object) }
        }
    }

    /// Deletes every key the rule wrote and restores what ``preserve(_:)`` kept, ignoring
    /// errors: the rule's outcome is settled.
    func cleanUp() async {
        let keys = written.withLock { Array($0.values) }
        for key in keys {
            try? await storage.delete(key)
        }
        for object in saved.withLock({ $0 }) {
            _ = try? await storage.put(object.info.key, data: object.data, contentType: object.info.contentType,
                                       metadata: object.info.metadata)
        }
    }
}
