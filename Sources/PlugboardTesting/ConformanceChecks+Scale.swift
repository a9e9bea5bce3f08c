import PlugboardAPI
import PlugboardConcurrency

extension ConformanceChecks {
    static let scaleRules: [Definition] = [
        Definition("large_object_64mib",
                   "An object of Options.largeObjectByteCount bytes (64 MiB by default) is stored and read back whole, with the right size and ETag. Optional: skipped when Options.includeLargeObjects is false.",
                   isOptional: true, largeObject),
        Definition("concurrent_writers",
                   "Many tasks putting distinct keys all succeed; many tasks putting one key leave exactly one of the written objects, whole, with matching size and ETag, and concurrent readers only ever see whole objects.",
                   concurrentWriters),
    ]

    private static func largeObject(_ c: ConformanceContext) async throws {
        let count = c.options.largeObjectByteCount
        let key = c.key("large")
        let data = c.bytes(count, seed: 64)
        let expectedETag = try c.md5Hex(data)
        let put = try await c.put(key, data)
        try c.expectEqual(put.size, count, "put of \(count)-byte key \(c.show(key)): size")
        try c.expectEqual(c.normalizedETag(put.etag), expectedETag, "put of \(count)-byte key \(c.show(key)): etag (quotes and case aside)")
        try c.expectEqual(try await c.head(key).size, count, "head of \(count)-byte key \(c.show(key)): size")
        try await c.expectStored(key, data)
    }

    private static func concurrentWriters(_ c: ConformanceContext) async throws {
        let tasks = c.options.concurrentTasks
        let distinct = (0..<tasks).map { c.key("distinct-\($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, key) in distinct.enumerated() {
                let data = c.bytes(1000 + index, seed: index)
                group.addTask { try await c.put(key, data) }
            }
            try await group.waitForAll()
        }
        for (index, key) in distinct.enumerated() {
            try await c.expectStored(key, c.bytes(1000 + index, seed: index))
        }
        let listed = try await c.listAll(prefix: c.key("distinct-"))
        try c.expectEqual(listed.count, tasks, "list after \(tasks) concurrent puts of distinct keys: number of objects")

        let shared = c.key("shared")
        let versions = (0..<tasks).map { c.bytes(20_000 + 7 * $0, seed: 1000 + $0) }
        let etags = try Set(versions.map { try c.md5Hex($0) })
        let torn = LockedValueBox<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for version in versions {
                group.addTask { try await c.put(shared, version) }
                group.addTask {
                    do {
                        let object = try await c.storage.get(shared)
                        if !versions.contains(object.data) {
                            torn.withLock { $0.append("get returned \(object.data.count) bytes that no put wrote") }
                        } else if object.info.size != object.data.count || !etags.contains(c.normalizedETag(object.info.etag)) {
                            torn.withLock { $0.append("get returned size \(object.info.size) and etag \(object.info.etag) for \(object.data.count) bytes") }
                        }
                    } catch let error as PlugboardError where error.code == .storageNotFound {
                        // Read before the first put landed: allowed.
                    } catch {
                        torn.withLock { $0.append("get failed with \(ConformanceText.describe(error))") }
                    }
                }
            }
            try await group.waitForAll()
        }
        if let first = torn.withLock({ $0.first }) {
            throw ConformanceCheckFailure("concurrent get of key \(c.show(shared)) while \(tasks) tasks put it: expected one whole written object, found: \(first)")
        }
        let final = try await c.get(shared)
        guard let winner = versions.firstIndex(of: final.data) else {
            throw ConformanceCheckFailure("get of key \(c.show(shared)) after \(tasks) concurrent puts: expected the data of one put, found \(final.data.count) bytes that no put wrote")
        }
        try await c.expectStored(shared, versions[winner])
        let head = try await c.head(shared)
        try c.expectEqual(head.etag, final.info.etag, "head of key \(c.show(shared)) after concurrent puts compared with get: etag")
    }
}
