import PlugboardAPI
import PlugboardConcurrency

extension ConformanceChecks {
    /// What a storage built against 1.0 or 1.1 implements to meet the 1.2 rules (the API's
    /// defaults collect a body, slice a whole read and refuse every condition).
    static let streamedPut = "implement put(_:body:contentType:metadata:condition:), storing the object only once its body has ended whole"
    static let rangedGet = "implement get(_:range:), reading only the bytes the range selects"
    static let conditionalPut = "implement put(_:body:contentType:metadata:condition:) checking .absent and .matches(etag:) in one step with the store (the API's default refuses every condition with storage.unsupported)"

    static let streamingRules: [Definition] = [
        Definition("streamed_put_equals_whole_put",
                   sinceMinor: 2, upgrade: Self.streamedPut,
                   "A put of a body in chunks of odd sizes (with and without a length, and an empty body) stores and returns what a whole put of the same bytes does: data, size, ETag, content type and metadata.",
                   streamedEqualsWhole),
        Definition("streamed_put_failing_body_stores_nothing",
                   sinceMinor: 2, upgrade: Self.streamedPut,
                   "A put whose body throws midway fails with the body's error, stores nothing under a new key and leaves a previous object whole and unchanged.",
                   failingBody),
        Definition("streamed_put_short_body_stores_nothing",
                   sinceMinor: 2, upgrade: Self.streamedPut,
                   "A put whose body ends before its length fails with storage.invalid_argument, stores nothing under a new key and leaves a previous object unchanged.",
                   shortBody),
        Definition("streamed_put_long_body_stores_nothing",
                   sinceMinor: 2, upgrade: Self.streamedPut,
                   "A put whose body yields more bytes than its length fails with storage.invalid_argument, stores nothing under a new key and leaves a previous object unchanged.",
                   longBody),
        Definition("streamed_put_cancelled_stores_nothing",
                   sinceMinor: 2, upgrade: Self.streamedPut,
                   "A put cancelled while its body is being read fails, and leaves a previous object under the key unchanged.",
                   cancelledPut),
        Definition("range_get_reads_the_bytes_asked",
                   sinceMinor: 2, upgrade: Self.rangedGet,
                   "get with a closed, from or suffix range returns the whole object's info, the resolved offsets and exactly those bytes, a last offset past the end clamped and a suffix longer than the object giving it whole.",
                   rangeForms),
        Definition("range_get_unsatisfiable_refused",
                   sinceMinor: 2, upgrade: Self.rangedGet,
                   "get with a range that selects no byte (first offset at or past the end, suffix 0) fails with storage.range_not_satisfiable, a malformed range with storage.invalid_argument, and a missing key with storage.not_found.",
                   rangeUnsatisfiable),
        Definition("range_get_nil_is_whole_object",
                   sinceMinor: 2, upgrade: Self.rangedGet,
                   "get with no range returns the whole object's bytes, range nil, and the info head reports.",
                   rangeNil),
        Definition("put_absent_creates_only",
                   sinceMinor: 2, upgrade: Self.conditionalPut,
                   "A put with condition absent stores the object when the key holds none, and fails with storage.precondition_failed, leaving the object unchanged, when it holds one.",
                   absentCreatesOnly),
        Definition("put_absent_concurrent_one_wins",
                   sinceMinor: 2, upgrade: Self.conditionalPut,
                   "Of many concurrent puts of one key with condition absent, exactly one succeeds, the others fail with storage.precondition_failed, and the key holds the winner's object.",
                   absentConcurrent),
        Definition("put_matches_etag",
                   sinceMinor: 2, upgrade: Self.conditionalPut,
                   "A put with condition matches(etag) replaces the object whose ETag it names, and fails with storage.precondition_failed on another ETag or a missing key, storing nothing.",
                   matchesETag),
        Definition("put_conditional_body_read_from_storage",
                   sinceMinor: 2, upgrade: Self.conditionalPut,
                   "A put with condition absent or matches(etag) whose body streams from other objects of the same storage (as an S3 CompleteMultipartUpload assembles its parts) honours the condition: refused with storage.precondition_failed leaving the object and the sources unchanged, granted storing the sources' bytes in order.",
                   conditionalBodyFromStorage),
    ]

    /// A streamed put that fails the rule when the storage throws.
    @discardableResult
    private static func putBody(_ c: ConformanceContext, _ key: String, _ body: ObjectBody, contentType: String? = nil,
                                metadata: [String: String] = [:], condition: WriteCondition = .none,
                                what: String) async throws -> ObjectInfo {
        c.track(key)
        do {
            return try await c.storage.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
        } catch {
            throw ConformanceCheckFailure("streamed put of key \(c.show(key)) (\(what)) failed with \(ConformanceText.describe(error))")
        }
    }

    private static func streamedEqualsWhole(_ c: ConformanceContext) async throws {
        let cases: [(String, [[UInt8]], Bool)] = [
            ("odd-chunks", ConformanceBody.chunks(c.bytes(100_003, seed: 11)), true),
            ("odd-chunks-no-length", ConformanceBody.chunks(c.bytes(70_001, seed: 12)), false),
            ("one-byte", [[42]], true),
            ("empty", [], true),
            ("empty-chunks", [[], [], []], true),
            ("empty-no-length", [], false),
        ]
        let metadata = ["origin": "stream"]
        for (name, chunks, knowsLength) in cases {
            let data = chunks.flatMap { $0 }
            let whole = try await c.put(c.key("\(name)-whole"), data, contentType: "text/plain", metadata: metadata)
            let key = c.key("\(name)-streamed")
            let what = "\(data.count) bytes in \(chunks.count) chunks, length \(knowsLength ? String(data.count) : "nil")"
            let body = ConformanceBody.make(chunks, length: knowsLength ? data.count : nil)
            let streamed = try await putBody(c, key, body, contentType: "text/plain", metadata: metadata, what: what)
            try c.expectEqual(streamed.size, whole.size, "streamed put of key \(c.show(key)) (\(what)): returned size compared with a whole put")
            try c.expectEqual(streamed.etag, whole.etag, "streamed put of key \(c.show(key)) (\(what)): returned etag compared with a whole put")
            try c.expectEqual(streamed.contentType, whole.contentType, "streamed put of key \(c.show(key)) (\(what)): returned content type")
            try c.expectEqual(streamed.metadata, whole.metadata, "streamed put of key \(c.show(key)) (\(what)): returned metadata")
            try c.expect(ObjectKey.isSame(streamed.key, as: key), "streamed put of key \(c.show(key)): expected the returned key to be the same bytes, found \(c.show(streamed.key))")
            try await c.expectStored(key, data)
            let head = try await c.head(key)
            try c.expectEqual(head.etag, streamed.etag, "head after streamed put of key \(c.show(key)) (\(what)): etag")
            try c.expectEqual(head.contentType, "text/plain", "head after streamed put of key \(c.show(key)) (\(what)): content type")
            try c.expectEqual(head.metadata, metadata, "head after streamed put of key \(c.show(key)) (\(what)): metadata")
        }
    }

    /// Puts a previous object under `key`, then runs `attempt` and checks that it failed as
    /// `failed` says and that the object is still exactly the previous one; then the same
    /// on a key that was never written, which must stay absent.
    private static func expectNothingStored(_ c: ConformanceContext, what: String,
                                            attempt: @escaping @Sendable (String) async throws -> Void,
                                            failed: @escaping @Sendable (any Error) -> Bool,
                                            expected: String) async throws {
        let key = c.key("previous")
        let previous = c.bytes(3000, seed: 21)
        let before = try await c.put(key, previous, contentType: "text/csv", metadata: ["version": "previous"])
        for target in [key, c.key("new")] {
            c.track(target)
            do {
                try await attempt(target)
                throw ConformanceCheckFailure("streamed put of key \(c.show(target)) (\(what)): expected \(expected), found success")
            } catch let failure as ConformanceCheckFailure {
                throw failure
            } catch {
                if !failed(error) {
                    throw ConformanceCheckFailure("streamed put of key \(c.show(target)) (\(what)): expected \(expected), found \(ConformanceText.describe(error))")
                }
            }
        }
        try await c.expectStored(key, previous)
        let head = try await c.head(key)
        try c.expectEqual(head.contentType, before.contentType, "head of key \(c.show(key)) after a failed streamed put (\(what)): content type")
        try c.expectEqual(head.metadata, before.metadata, "head of key \(c.show(key)) after a failed streamed put (\(what)): metadata")
        try await c.expectAbsent(c.key("new"), "after a failed streamed put (\(what))")
    }

    private static func isCode(_ code: PlugboardError.Code) -> @Sendable (any Error) -> Bool {
        { ($0 as? PlugboardError)?.code == code }
    }

    private static func failingBody(_ c: ConformanceContext) async throws {
        let chunks = ConformanceBody.chunks(c.bytes(200_000, seed: 22), sizes: [65_536])
        try await expectNothingStored(c, what: "a body that throws after 2 of \(chunks.count) chunks", attempt: { key in
            _ = try await c.storage.put(key, body: ConformanceBody.make(chunks, length: 200_000, failAfter: 2),
                                        contentType: nil, metadata: [:], condition: .none)
        }, failed: { $0 is ConformanceBody.Failure }, expected: "the body's own error")
    }

    private static func shortBody(_ c: ConformanceContext) async throws {
        let chunks = ConformanceBody.chunks(c.bytes(100_000, seed: 23), sizes: [30_001])
        try await expectNothingStored(c, what: "length 150000, 100000 bytes", attempt: { key in
            _ = try await c.storage.put(key, body: ConformanceBody.make(chunks, length: 150_000),
                                        contentType: nil, metadata: [:], condition: .none)
        }, failed: isCode(.storageInvalidArgument), expected: "storage.invalid_argument")
    }

    private static func longBody(_ c: ConformanceContext) async throws {
        let chunks = ConformanceBody.chunks(c.bytes(100_000, seed: 24), sizes: [30_001])
        try await expectNothingStored(c, what: "length 50000, 100000 bytes", attempt: { key in
            _ = try await c.storage.put(key, body: ConformanceBody.make(chunks, length: 50_000),
                                        contentType: nil, metadata: [:], condition: .none)
        }, failed: isCode(.storageInvalidArgument), expected: "storage.invalid_argument")
    }

    private static func cancelledPut(_ c: ConformanceContext) async throws {
        let key = c.key("previous")
        let previous = c.bytes(3000, seed: 25)
        try await c.put(key, previous)
        let (started, continuation) = AsyncStream<Void>.makeStream()
        let body = ConformanceBody.stalling(after: c.bytes(65_536, seed: 26), length: 1_000_000, started: continuation)
        let storage = c.storage
        let task = Task {
            // Ends the wait below also when the storage fails before reading the body.
            defer { continuation.finish() }
            return try await storage.put(key, body: body, contentType: nil, metadata: [:], condition: .none)
        }
        for await _ in started { break }
        task.cancel()
        switch await task.result {
        case .success:
            throw ConformanceCheckFailure("streamed put of key \(c.show(key)) cancelled while its body stalled: expected an error, found success")
        case .failure:
            break
        }
        try await c.expectStored(key, previous)
    }

    /// The object the range rules read: 1000 bytes, with a content type and metadata.
    private static func rangeObject(_ c: ConformanceContext) async throws -> (key: String, data: [UInt8], info: ObjectInfo) {
        let key = c.key("object")
        let data = c.bytes(1000, seed: 31)
        try await c.put(key, data, contentType: "application/x-ranged", metadata: ["part": "whole"])
        return (key, data, try await c.head(key))
    }

    /// A ranged get that fails the rule when the storage throws, with its body collected.
    private static func rangedGet(_ c: ConformanceContext, _ key: String, _ range: ByteRange?) async throws -> (ObjectStream, [UInt8]) {
        let shown = range.map { "\($0)" } ?? "nil"
        let stream: ObjectStream
        let bytes: [UInt8]
        do {
            stream = try await c.storage.get(key, range: range)
            bytes = try await stream.body.collect(upTo: 1 << 30)
        } catch {
            throw ConformanceCheckFailure("get of key \(c.show(key)) with range \(shown) failed with \(ConformanceText.describe(error))")
        }
        return (stream, bytes)
    }

    private static func rangeForms(_ c: ConformanceContext) async throws {
        let (key, data, head) = try await rangeObject(c)
        let cases: [(ByteRange, Range<Int>)] = [
            (.closed(first: 0, last: 99), 0..<100),
            (.closed(first: 10, last: 10), 10..<11),
            (.closed(first: 990, last: 5000), 990..<1000),
            (.closed(first: 999, last: Int.max), 999..<1000),
            (.from(500), 500..<1000),
            (.from(0), 0..<1000),
            (.suffix(10), 990..<1000),
            (.suffix(1000), 0..<1000),
            (.suffix(5000), 0..<1000),
        ]
        for (range, expected) in cases {
            let (stream, bytes) = try await rangedGet(c, key, range)
            let what = "get of key \(c.show(key)) (1000 bytes) with range \(range)"
            try c.expectEqual(stream.range, expected, "\(what): range")
            try c.expect(bytes == Array(data[expected]),
                         "\(what): expected the \(expected.count) bytes at offsets \(expected.lowerBound) to \(expected.upperBound - 1), found \(bytes.count) bytes\(bytes.count == expected.count ? " with different content" : "")")
            if let length = stream.body.length {
                try c.expectEqual(length, expected.count, "\(what): body length")
            }
            try c.expectEqual(stream.info.size, 1000, "\(what): info.size (the whole object's)")
            try c.expectEqual(stream.info.etag, head.etag, "\(what): info.etag (the whole object's)")
            try c.expectEqual(stream.info.contentType, head.contentType, "\(what): info.contentType")
            try c.expectEqual(stream.info.metadata, head.metadata, "\(what): info.metadata")
        }
    }

    private static func rangeUnsatisfiable(_ c: ConformanceContext) async throws {
        let (key, _, _) = try await rangeObject(c)
        for range in [ByteRange.from(1000), .closed(first: 1000, last: 1005), .from(Int.max), .suffix(0)] {
            try await c.expectError(.storageRangeNotSatisfiable, "get of key \(c.show(key)) (1000 bytes) with range \(range)") {
                _ = try await c.storage.get(key, range: range)
            }
        }
        let empty = c.key("empty")
        try await c.put(empty, [])
        for range in [ByteRange.from(0), .closed(first: 0, last: 0)] {
            try await c.expectError(.storageRangeNotSatisfiable, "get of empty key \(c.show(empty)) with range \(range)") {
                _ = try await c.storage.get(empty, range: range)
            }
        }
        for range in [ByteRange.closed(first: 5, last: 2), .from(-1), .suffix(-3)] {
            try await c.expectError(.storageInvalidArgument, "get of key \(c.show(key)) with malformed range \(range)") {
                _ = try await c.storage.get(key, range: range)
            }
        }
        let missing = c.key("never-written")
        try await c.expectError(.storageNotFound, "get of missing key \(c.show(missing)) with range .closed(first: 0, last: 9)") {
            _ = try await c.storage.get(missing, range: .closed(first: 0, last: 9))
        }
    }

    private static func rangeNil(_ c: ConformanceContext) async throws {
        let (key, data, head) = try await rangeObject(c)
        let (stream, bytes) = try await rangedGet(c, key, nil)
        try c.expect(stream.range == nil, "get of key \(c.show(key)) with range nil: expected range nil, found \(stream.range.map { "\($0)" } ?? "nil")")
        try c.expect(bytes == data, "get of key \(c.show(key)) with range nil: expected the 1000 bytes written, found \(bytes.count) bytes\(bytes.count == 1000 ? " with different content" : "")")
        try c.expectEqual(stream.info, head, "get of key \(c.show(key)) with range nil: info compared with head")
        let empty = c.key("empty")
        try await c.put(empty, [])
        let (emptyStream, emptyBytes) = try await rangedGet(c, empty, nil)
        try c.expect(emptyStream.range == nil && emptyBytes.isEmpty,
                     "get of empty key \(c.show(empty)) with range nil: expected no bytes and range nil, found \(emptyBytes.count) bytes")
    }

    private static func absentCreatesOnly(_ c: ConformanceContext) async throws {
        let key = c.key("created")
        let first = c.bytes(2000, seed: 41)
        let info = try await putBody(c, key, ObjectBody(first), contentType: "text/plain", condition: .absent,
                                     what: "condition absent on a missing key")
        try c.expectEqual(c.normalizedETag(info.etag), try c.md5Hex(first), "put of key \(c.show(key)) with condition absent: returned etag")
        try await c.expectStored(key, first)
        for (index, body) in [ObjectBody(c.bytes(10, seed: 42)), ConformanceBody.make([c.bytes(10, seed: 42)], length: nil)].enumerated() {
            try await c.expectError(.storagePreconditionFailed, "put of existing key \(c.show(key)) with condition absent (body \(index + 1))") {
                _ = try await c.storage.put(key, body: body, contentType: nil, metadata: [:], condition: .absent)
            }
        }
        try await c.expectStored(key, first)
        try c.expectEqual(try await c.head(key).contentType, "text/plain", "head of key \(c.show(key)) after refused puts with condition absent: content type")
        // Absent again after a delete: the condition is about the key's current state.
        try await c.delete(key)
        let again = c.bytes(5, seed: 43)
        try await putBody(c, key, ObjectBody(again), condition: .absent, what: "condition absent after a delete")
        try await c.expectStored(key, again)
    }

    private static func absentConcurrent(_ c: ConformanceContext) async throws {
        let key = c.key("contended")
        c.track(key)
        let tasks = max(2, c.options.concurrentTasks)
        let versions = (0..<tasks).map { c.bytes(5000 + $0, seed: 500 + $0) }
        let outcomes = LockedValueBox<(won: [Int], other: [String])>(([], []))
        await withTaskGroup(of: Void.self) { group in
            for (index, version) in versions.enumerated() {
                group.addTask {
                    do {
                        _ = try await c.storage.put(key, body: ObjectBody(version), contentType: nil, metadata: [:], condition: .absent)
                        outcomes.withLock { $0.won.append(index) }
                    } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
                        // Lost the race: what the rule expects of all but one.
                    } catch {
                        outcomes.withLock { $0.other.append(ConformanceText.describe(error)) }
                    }
                }
            }
        }
        let (won, other) = outcomes.withLock { $0 }
        if let first = other.first {
            throw ConformanceCheckFailure("\(tasks) concurrent puts of key \(c.show(key)) with condition absent: expected success or storage.precondition_failed, found \(first)")
        }
        try c.expectEqual(won.count, 1, "\(tasks) concurrent puts of key \(c.show(key)) with condition absent: number that succeeded")
        try await c.expectStored(key, versions[won[0]])
    }

    /// A body that reads `sources` of the storage one after the other, each opened when
    /// the previous one has ended, as S3's CompleteMultipartUpload concatenates its parts.
    private static func body(concatenating sources: [String], length: Int, of c: ConformanceContext) -> ObjectBody {
        let reader = ConcatenatedReads(storage: c.storage, keys: sources)
        return ObjectBody(length: length) { try await reader.next() }
    }

    private static func conditionalBodyFromStorage(_ c: ConformanceContext) async throws {
        let parts = [c.bytes(3000, seed: 61), c.bytes(1, seed: 62), c.bytes(4097, seed: 63)]
        var sources: [String] = []
        for (index, part) in parts.enumerated() {
            let key = c.key("part-\(index + 1)")
            _ = try await c.put(key, part)
            sources.append(key)
        }
        let whole = parts.flatMap { $0 }
        let target = c.key("assembled")
        let existing = try await c.put(target, c.bytes(100, seed: 64), contentType: "text/plain")
        try await c.expectError(.storagePreconditionFailed, "put of existing key \(c.show(target)) with condition absent and a body read from the same storage") {
            _ = try await c.storage.put(target, body: body(concatenating: sources, length: whole.count, of: c), contentType: nil,
                                        metadata: [:], condition: .absent)
        }
        try c.expectEqual(try await c.head(target).etag, existing.etag, "head of key \(c.show(target)) after a refused put with condition absent: etag")
        try await c.expectError(.storagePreconditionFailed, "put of key \(c.show(target)) with condition matches(another etag) and a body read from the same storage") {
            _ = try await c.storage.put(target, body: body(concatenating: sources, length: whole.count, of: c), contentType: nil,
                                        metadata: [:], condition: .matches(etag: try c.md5Hex(whole)))
        }
        try c.expectEqual(try await c.head(target).etag, existing.etag, "head of key \(c.show(target)) after a refused put with condition matches: etag")
        let replaced = try await putBody(c, target, body(concatenating: sources, length: whole.count, of: c),
                                         condition: .matches(etag: existing.etag), what: "condition matches and a body read from the same storage")
        try c.expectEqual(c.normalizedETag(replaced.etag), try c.md5Hex(whole), "put of key \(c.show(target)) with condition matches(current etag) and a body read from the same storage: returned etag")
        try await c.expectStored(target, whole)
        let created = c.key("assembled-new")
        try await putBody(c, created, body(concatenating: sources, length: whole.count, of: c), condition: .absent,
                          what: "condition absent on a missing key and a body read from the same storage")
        try await c.expectStored(created, whole)
        for (key, part) in zip(sources, parts) { try await c.expectStored(key, part) }
    }

    private static func matchesETag(_ c: ConformanceContext) async throws {
        let key = c.key("versioned")
        let first = try await c.put(key, c.bytes(1000, seed: 51))
        let second = c.bytes(1200, seed: 52)
        let replaced = try await putBody(c, key, ConformanceBody.make(ConformanceBody.chunks(second), length: second.count),
                                         metadata: ["version": "2"], condition: .matches(etag: first.etag),
                                         what: "condition matches the current etag")
        try c.expectEqual(c.normalizedETag(replaced.etag), try c.md5Hex(second), "put of key \(c.show(key)) with condition matches(current etag): returned etag")
        try await c.expectStored(key, second)
        try await c.expectError(.storagePreconditionFailed, "put of key \(c.show(key)) with condition matches(a replaced etag)") {
            _ = try await c.storage.put(key, body: ObjectBody(c.bytes(10, seed: 53)), contentType: nil, metadata: [:],
                                        condition: .matches(etag: first.etag))
        }
        try await c.expectStored(key, second)
        try c.expectEqual(try await c.head(key).metadata, ["version": "2"], "head of key \(c.show(key)) after a refused matches put: metadata")
        let missing = c.key("never-written")
        c.track(missing)
        try await c.expectError(.storagePreconditionFailed, "put of missing key \(c.show(missing)) with condition matches(an etag)") {
            _ = try await c.storage.put(missing, body: ObjectBody(c.bytes(10, seed: 54)), contentType: nil, metadata: [:],
                                        condition: .matches(etag: first.etag))
        }
        try await c.expectAbsent(missing, "after a refused put with condition matches")
    }
}

/// Reads objects of one storage one after the other, chunk by chunk, for a body.
private final class ConcatenatedReads: @unchecked Sendable {
    // @unchecked: an ObjectBody has one reader at a time, which calls next() in turn.
    private let storage: any ObjectStorage
    private var keys: ArraySlice<String>
    private var current: ObjectBody.Iterator?

    init(storage: any ObjectStorage, keys: [String]) {
        self.storage = storage
        self.keys = keys[...]
    }

    func next() async throws -> [UInt8]? {
        while true {
            if var iterator = current, let chunk = try await iterator.next() {
                current = iterator
                return chunk
            }
            guard let key = keys.popFirst() else { return nil }
            current = try await storage.get(key, range: nil).body.makeAsyncIterator()
        }
    }
}
