import PlugboardAPI
import Glibc
import PlugboardTesting
import Testing

/// A backend as written against PlugboardAPI 1.1: the five whole-object methods and
/// nothing else, so every streaming call goes through the protocol's defaults.
private final class WholeObjectOnlyStorage: ObjectStorage, @unchecked Sendable {
    private let base = InMemoryObjectStorage()
    private let lock = TestLock()
    private var wholePuts = 0
    private var wholeGets = 0

    var calls: (puts: Int, gets: Int) { lock.with { (wholePuts, wholeGets) } }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        lock.with { wholePuts += 1 }
        return try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func get(_ key: String) async throws -> StoredObject {
        lock.with { wholeGets += 1 }
        return try await base.get(key)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await base.head(key) }
    func delete(_ key: String) async throws { try await base.delete(key) }
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}

/// A pthread mutex for the test doubles, which count calls from many tasks.
private final class TestLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func with<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}

/// A body of `chunks` that counts how many chunks were pulled.
private func countingBody(_ chunks: [[UInt8]], length: Int?, pulled: Counter) -> ObjectBody {
    ObjectBody(length: length) {
        let index = pulled.next()
        return index < chunks.count ? chunks[index] : nil
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = TestLock()
    private var value = 0
    func next() -> Int { lock.with { defer { value += 1 }; return value } }
    var count: Int { lock.with { value } }
}

@Suite("Streaming forms of ObjectStorage (PlugboardAPI 1.2)")
struct StreamingAPITests {
    @Test func apiVersion_hasTheStreamingForms() {
        #expect(APIVersion.current >= APIVersion(major: 1, minor: 2, patch: 0))
    }

    // MARK: Defaults for a 1.1 conformer

    @Test func oldConformer_streamedPut_goesThroughTheWholePut() async throws {
        let storage = WholeObjectOnlyStorage()
        let chunks: [[UInt8]] = [[1, 2, 3], [], [4], Array(repeating: 9, count: 10_001)]
        let data = chunks.flatMap { $0 }
        let info = try await storage.put("k", body: ObjectBody(length: data.count, AsyncStreamOf(chunks)),
                                         contentType: "text/plain", metadata: ["a": "b"], condition: .none)
        #expect(info.size == data.count)
        #expect(try await storage.data(for: "k") == data)
        #expect(try await storage.head("k").contentType == "text/plain")
        #expect(storage.calls.puts == 1)
    }

    @Test func oldConformer_conditions_areRefusedUnsupported_beforeTheBodyIsRead() async throws {
        let storage = WholeObjectOnlyStorage()
        for condition in [WriteCondition.absent, .matches(etag: "d41d8cd98f00b204e9800998ecf8427e")] {
            let pulled = Counter()
            let error = await #expect(throws: PlugboardError.self) {
                try await storage.put("k", body: countingBody([[1]], length: 1, pulled: pulled),
                                      contentType: nil, metadata: [:], condition: condition)
            }
            #expect(error?.code == .storageUnsupported)
            #expect(error?.hint?.contains("PlugboardAPI 1.2") == true)
            #expect(pulled.count == 0)
        }
        #expect(storage.calls.puts == 0)
        #expect(try await storage.exists("k") == false)
    }

    @Test func oldConformer_badArguments_refusedBeforeTheBodyIsRead() async throws {
        let storage = WholeObjectOnlyStorage()
        let pulled = Counter()
        let cases: [(String, String?, [String: String], PlugboardError.Code)] = [
            ("", nil, [:], .storageInvalidKey), ("k", "", [:], .storageInvalidArgument), ("k", nil, ["Bad": "x"], .storageInvalidMetadata),
        ]
        for (key, type, metadata, code) in cases {
            let error = await #expect(throws: PlugboardError.self) {
                try await storage.put(key, body: countingBody([[1]], length: 1, pulled: pulled),
                                      contentType: type, metadata: metadata, condition: .none)
            }
            #expect(error?.code == code)
        }
        #expect(pulled.count == 0)
    }

    @Test func oldConformer_bodyOfWrongLength_storesNothing() async throws {
        let storage = WholeObjectOnlyStorage()
        try await storage.put("k", data: [7, 7, 7])
        for (chunks, length) in [([[UInt8]]([[1, 2], [3]]), 5), ([[1, 2], [3, 4]], 3)] {
            let error = await #expect(throws: PlugboardError.self) {
                try await storage.put("k", body: countingBody(chunks, length: length, pulled: Counter()),
                                      contentType: nil, metadata: [:], condition: .none)
            }
            #expect(error?.code == .storageInvalidArgument)
            #expect(error?.detail?.contains("Expected \(length) bytes") == true)
        }
        #expect(try await storage.data(for: "k") == [7, 7, 7])
        #expect(storage.calls.puts == 1)
    }

    @Test func oldConformer_rangedGet_slicesTheWholeGet() async throws {
        let storage = WholeObjectOnlyStorage()
        let data = (0..<100).map { UInt8($0) }
        try await storage.put("k", data: data)
        let stream = try await storage.get("k", range: .closed(first: 10, last: 19))
        #expect(stream.range == 10..<20)
        #expect(stream.info.size == 100)
        #expect(stream.body.length == 10)
        #expect(try await stream.body.collect(upTo: 100) == Array(data[10..<20]))
        let whole = try await storage.get("k", range: nil)
        #expect(whole.range == nil)
        #expect(try await whole.body.collect(upTo: 100) == data)
        let error = await #expect(throws: PlugboardError.self) { try await storage.get("k", range: .from(100)) }
        #expect(error?.code == .storageRangeNotSatisfiable)
        #expect(error?.detail?.contains("size is 100") == true)
        let malformed = await #expect(throws: PlugboardError.self) { try await storage.get("k", range: .closed(first: 3, last: 1)) }
        #expect(malformed?.code == .storageInvalidArgument)
        #expect(storage.calls.gets == 3)
    }

    @Test func oldConformer_failsTheConditionRulesOnly() async {
        let options = ObjectStorageConformance.Options(includeLargeObjects: false)
        let report = await ObjectStorageConformance(makeStorage: { WholeObjectOnlyStorage() }, options: options).run()
        #expect(Set(report.failedRuleNames) == ["put_absent_creates_only", "put_absent_concurrent_one_wins", "put_matches_etag",
                                                     "put_conditional_body_read_from_storage"], "\(report)")
    }

    // MARK: ObjectBody

    @Test func body_fromBytes_yieldsThemOnce() async throws {
        let body = ObjectBody([1, 2, 3])
        #expect(body.length == 3)
        #expect(try await body.collect(upTo: 3) == [1, 2, 3])
        var again: [[UInt8]] = []
        for try await chunk in body { again.append(chunk) }
        #expect(again.isEmpty)
    }

    @Test func body_collect_refusesOverTheLimit_beforeReadingWhenTheLengthSaysSo() async throws {
        let pulled = Counter()
        let error = await #expect(throws: PlugboardError.self) {
            try await countingBody([[1, 2, 3]], length: 3, pulled: pulled).collect(upTo: 2)
        }
        #expect(error?.code == .storageInvalidArgument)
        #expect(error?.detail == "Expected at most 2 bytes, found a length of 3.")
        #expect(pulled.count == 0)
        let unknown = await #expect(throws: PlugboardError.self) {
            try await countingBody([[1, 2], [3]], length: nil, pulled: Counter()).collect(upTo: 2)
        }
        #expect(unknown?.detail == "Expected at most 2 bytes, found at least 3.")
        #expect(try await countingBody([[1, 2], [3]], length: nil, pulled: Counter()).collect(upTo: 3) == [1, 2, 3])
    }

    @Test func body_collect_refusesShortAndLongBodies() async throws {
        let short = await #expect(throws: PlugboardError.self) {
            try await countingBody([[1, 2]], length: 4, pulled: Counter()).collect(upTo: 10)
        }
        #expect(short?.message == "object body ended short of its length")
        #expect(short?.detail == "Expected 4 bytes, found 2 before the body ended.")
        #expect(short?.hint != nil)
        let long = await #expect(throws: PlugboardError.self) {
            try await countingBody([[1, 2], [3, 4]], length: 3, pulled: Counter()).collect(upTo: 10)
        }
        #expect(long?.detail == "Expected 3 bytes, found at least 4.")
        let negative = await #expect(throws: PlugboardError.self) {
            try await ObjectBody(length: -1) { nil }.collect(upTo: 10)
        }
        #expect(negative?.code == .storageInvalidArgument)
    }

    @Test func body_passesTheSourcesErrorThrough() async {
        struct Broken: Error {}
        let body = ObjectBody(length: 10) { throw Broken() }
        await #expect(throws: Broken.self) { try await body.collect(upTo: 10) }
    }

    // MARK: ByteRange

    @Test func range_resolve_followsRFC9110() {
        #expect(ByteRange.closed(first: 0, last: 499).resolve(size: 1000) == 0..<500)
        #expect(ByteRange.closed(first: 500, last: 5000).resolve(size: 1000) == 500..<1000)
        #expect(ByteRange.closed(first: 1000, last: 1000).resolve(size: 1000) == nil)
        #expect(ByteRange.from(999).resolve(size: 1000) == 999..<1000)
        #expect(ByteRange.from(1000).resolve(size: 1000) == nil)
        #expect(ByteRange.suffix(1).resolve(size: 1000) == 999..<1000)
        #expect(ByteRange.suffix(5000).resolve(size: 1000) == 0..<1000)
        #expect(ByteRange.suffix(0).resolve(size: 1000) == nil)
        #expect(ByteRange.suffix(3).resolve(size: 0) == 0..<0)
        #expect(ByteRange.from(0).resolve(size: 0) == nil)
        #expect(ByteRange.closed(first: 5, last: 2).resolve(size: 1000) == nil)
        #expect(ByteRange.from(-1).resolve(size: 1000) == nil)
        #expect(ByteRange.closed(first: 0, last: Int.max).resolve(size: 10) == 0..<10)
    }

    @Test func range_parse_readsTheHeaderForms() {
        #expect(ByteRange.parse(header: "bytes=0-499") == .single(.closed(first: 0, last: 499)))
        #expect(ByteRange.parse(header: "bytes=500-") == .single(.from(500)))
        #expect(ByteRange.parse(header: "bytes=-500") == .single(.suffix(500)))
        #expect(ByteRange.parse(header: "Bytes= 7-7 ") == .single(.closed(first: 7, last: 7)))
        #expect(ByteRange.parse(header: "bytes=0-0, -1") == .multiple([.closed(first: 0, last: 0), .suffix(1)]))
        #expect(ByteRange.parse(header: "bytes=1-2,,") == .single(.closed(first: 1, last: 2)))
        #expect(ByteRange.parse(header: "bytes=99999999999999999999999-") == .single(.from(Int.max)))
        #expect(ByteRange.parse(header: "bytes=0-99999999999999999999999") == .single(.closed(first: 0, last: Int.max)))
        for invalid in ["", "bytes", "bytes=", "bytes=-", "bytes=5-2", "bytes=a-b", "bytes=+1-2", "bytes=1-2-3",
                        "items=0-1", "bytes=0-1,x", "bytes = 0-1", "bytes=- 5", "bytes=1 -2"] {
            #expect(ByteRange.parse(header: invalid) == .invalid, "\(invalid)")
        }
    }

    @Test func range_validate_refusesMalformedRanges() {
        for range in [ByteRange.closed(first: -1, last: 2), .closed(first: 3, last: 2), .from(-5), .suffix(-1)] {
            #expect(throws: PlugboardError.self) { try range.validate() }
        }
        #expect(throws: Never.self) { try ByteRange.suffix(0).validate() }
    }

    @Test func errorHelpers_sayExpectedAndFound() {
        let failed = PlugboardError.preconditionFailed(key: "k", condition: .absent, exists: true, currentETag: "abc")
        #expect(failed.code == .storagePreconditionFailed)
        #expect(failed.detail == "Expected no object under the key, found an object with ETag \"abc\".")
        let range = PlugboardError.rangeNotSatisfiable(key: "k", range: .from(10), size: 10)
        #expect(range.code == .storageRangeNotSatisfiable)
        #expect(range.detail?.contains("the object's size is 10") == true)
    }
}

/// An `AsyncSequence & Sendable` of fixed chunks, for ``ObjectBody/init(length:_:)``.
private struct AsyncStreamOf: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let chunks: [[UInt8]]
    init(_ chunks: [[UInt8]]) { self.chunks = chunks }
    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks) }
    struct Iterator: AsyncIteratorProtocol {
        var chunks: [[UInt8]]
        var index = 0
        mutating func next() async -> [UInt8]? {
            guard index < chunks.count else { return nil }
            defer { index += 1 }
            return chunks[index]
        }
    }
}
