import PlugboardAPI
import PlugboardConcurrency

/// ``ObjectStorage/getWithoutWaiting(_:range:)`` (PlugboardAPI 1.4): whenever a backend
/// answers at once, it answers what ``ObjectStorage/get(_:range:)`` does. A backend that
/// never answers at once (the API's default) passes both rules.
extension ConformanceChecks {
    static let readsWithoutWaitingRules: [Definition] = [
        Definition("get_without_waiting_matches_get",
                   sinceMinor: 4, upgrade: "implement getWithoutWaiting(_:range:), answering on the caller's thread only what needs no waiting",
                   "getWithoutWaiting, when it answers (nil means: call get), returns the info, offsets and bytes get(_:range:) returns for whole objects, the empty object and every range form, and throws the code get throws for a missing key, an invalid key, an unsatisfiable and a malformed range. Skipped when the storage answers no read at once (the API's default).",
                   matchesGet),
        Definition("get_without_waiting_sees_whole_versions",
                   sinceMinor: 4, upgrade: "implement getWithoutWaiting(_:range:), answering on the caller's thread only what needs no waiting",
                   "getWithoutWaiting during concurrent puts of one key returns one written version whole: bytes of one version, and size and ETag of those bytes. Skipped when the storage does not read a key just written at once (the API's default).",
                   wholeVersions),
    ]

    private static func matchesGet(_ c: ConformanceContext) async throws {
        let key = c.key("ready")
        let data = c.bytes(1000, seed: 61)
        try await c.put(key, data, contentType: "text/plain", metadata: ["origin": "ready"])
        let empty = c.key("empty")
        try await c.put(empty, [])
        let missing = c.key("never-written")
        let ranges: [ByteRange?] = [nil, .closed(first: 0, last: 0), .closed(first: 10, last: 19), .closed(first: 990, last: 5000),
                                    .from(0), .from(999), .suffix(1), .suffix(5000), .from(1000), .suffix(0),
                                    .closed(first: 5, last: 2), .from(-1)]
        var cases: [(String, ByteRange?)] = ranges.map { (key, $0) }
        cases += [(empty, nil), (empty, .from(0)), (missing, nil), (missing, .closed(first: 0, last: 9)),
                  ("", nil), ("a\u{0}b", nil), (String(repeating: "k", count: 1025), nil)]
        var answered = 0
        for (key, range) in cases {
            let what = "getWithoutWaiting of key \(c.show(key)) with range \(range.map { "\($0)" } ?? "nil")"
            let ready: ReadyObject
            do throws(PlugboardError) {
                guard let found = try c.storage.getWithoutWaiting(key, range: range) else { continue }
                ready = found
                answered += 1
            } catch {
                answered += 1
                try await c.expectError(error.code, "\(what) threw \(error.code); get(_:range:) of the same") {
                    _ = try await c.storage.get(key, range: range)
                }
                continue
            }
            let stream: ObjectStream
            do {
                stream = try await c.storage.get(key, range: range)
            } catch {
                throw ConformanceCheckFailure("\(what) answered \(ready.bytes.count) bytes, but get(_:range:) of the same failed with \(ConformanceText.describe(error))")
            }
            let bytes = try await stream.body.collect(upTo: 1 << 20)
            try c.expectEqual(ready.info, stream.info, "\(what): info compared with get(_:range:)")
            try c.expectEqual(ready.range, stream.range, "\(what): offsets compared with get(_:range:)")
            try c.expect(ready.bytes == bytes,
                         "\(what): expected the \(bytes.count) bytes get(_:range:) returns, found \(ready.bytes.count) bytes\(ready.bytes.count == bytes.count ? " with different content" : "")")
        }
        if answered == 0 {
            throw ConformanceSkip("getWithoutWaiting answered none of the \(cases.count) reads (nil, the API's default): the storage reads nothing at once")
        }
    }

    private static func wholeVersions(_ c: ConformanceContext) async throws {
        let key = c.key("contended")
        let versions = [c.bytes(3000, seed: 62), c.bytes(5000, seed: 63)]
        try await c.put(key, versions[0])
        // Nothing to race for a storage that does not read at once (S3 against moto, whose
        // concurrent puts of one key also fail under load).
        let first: ReadyObject?
        do throws(PlugboardError) {
            first = try c.storage.getWithoutWaiting(key, range: nil)
        } catch {
            throw ConformanceCheckFailure("getWithoutWaiting of key \(c.show(key)), just written, failed with \(ConformanceText.describe(error))")
        }
        guard first != nil else {
            throw ConformanceSkip("getWithoutWaiting of a key just written answered nil (the API's default): the storage reads nothing at once")
        }
        let etags = try versions.map { try c.md5Hex($0) }
        let writers = max(2, c.options.concurrentTasks)
        let problems = LockedValueBox<[String]>([])
        let done = LockedValueBox(false)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for round in 0..<20 {
                        let version = versions[(writer + round) % 2]
                        do {
                            _ = try await c.storage.put(key, data: version, contentType: nil, metadata: [:])
                        } catch {
                            problems.withLock { $0.append("put of key \(c.show(key)) failed with \(ConformanceText.describe(error))") }
                            return
                        }
                    }
                }
            }
            group.addTask {
                while !done.withLock({ $0 }) {
                    let problem: String?
                    do throws(PlugboardError) {
                        problem = try c.storage.getWithoutWaiting(key, range: nil).flatMap { ready in
                            guard let found = versions.firstIndex(of: ready.bytes) else {
                                return "getWithoutWaiting of key \(c.show(key)) returned \(ready.bytes.count) bytes that are neither written version (3000 or 5000 bytes)"
                            }
                            guard ready.info.size == ready.bytes.count, c.normalizedETag(ready.info.etag) == etags[found] else {
                                return "getWithoutWaiting of key \(c.show(key)) returned version \(found + 1)'s bytes with size \(ready.info.size) and ETag \(ready.info.etag)"
                            }
                            return nil
                        }
                    } catch {
                        problem = "getWithoutWaiting of key \(c.show(key)) failed with \(ConformanceText.describe(error)) while puts replaced it"
                    }
                    if let problem {
                        problems.withLock { $0.append(problem) }
                        return
                    }
                    await Task.yield()
                }
            }
            for _ in 0..<writers { await group.next() }
            done.withLock { $0 = true }
        }
        if let first = problems.withLock({ $0.first }) { throw ConformanceCheckFailure(first) }
    }
}
