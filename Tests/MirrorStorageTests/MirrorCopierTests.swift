import InMemoryStorage
import MirrorStorageCore
import PlugboardAPI
import PlugboardTesting
import Testing

/// The copier: every object moved, the races of a put or a delete with its copy, resume.
@Suite struct MirrorCopierTests {
    /// Waits for the copier to end, or records that it hung (the bound has room for a busy machine).
    static func ended(_ mirror: MirrorStorage) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { await mirror.copier.waitUntilEnded(); return true }
            group.addTask { try await Task.sleep(for: .seconds(120)); return false }
            let finished = try await group.next() ?? false
            group.cancelAll()
            #expect(finished, "the copier hung")
        }
    }

    /// `count` objects in a gated old backend, and a mirror copying one at a time, stopped
    /// holding `key` (read, not yet written).
    static func copying(_ key: String, of count: Int, pageSize: Int = 1000) async throws -> (MirrorFixture, GatedStorage, MirrorStorage) {
        let gated = GatedStorage(base: InMemoryObjectStorage(), key: key)
        let fixture = MirrorFixture(old: gated)
        try await fixture.fill(fixture.old, count: count)
        let mirror = fixture.mirror(concurrency: 1, pageSize: pageSize)
        try await mirror.start()
        var reached = gated.reached.makeAsyncIterator()
        await reached.next()
        return (fixture, gated, mirror)
    }

    @Test func movesEveryObject_withContentTypeAndMetadata_andSaysItFinished() async throws {
        let fixture = MirrorFixture()
        try await fixture.fill(fixture.old, count: 250)
        let mirror = fixture.mirror(concurrency: 8, pageSize: 40)
        try await mirror.start()
        try await Self.ended(mirror)
        for i in 0..<250 {
            let moved = try await fixture.new.get(MirrorFixture.key(i))
            #expect(moved.data == MirrorFixture.bytes(i))
            #expect(moved.info.contentType == "text/plain")
            #expect(moved.info.metadata == ["n": "\(i)"])
        }
        let progress = mirror.progress
        #expect(progress.finished && progress.copied == 250 && progress.examined == 250 && progress.failed == 0)
        #expect(fixture.log.contains(.notice, "mirror finished"))
        await mirror.stop()

        // A restart after the end copies nothing: the checkpoint says it is done.
        let again = fixture.mirror()
        try await again.start()
        try await Self.ended(again)
        #expect(again.progress.finished && again.progress.examined == 0)
        await again.stop()
    }

    @Test func concurrentPutsAndDeletes_duringTheCopy_loseNothing_resurrectNothing() async throws {
        let fixture = MirrorFixture()
        let count = 400
        try await fixture.fill(fixture.old, count: count)
        let mirror = fixture.mirror(concurrency: 8, pageSize: 25)
        try await mirror.start()
        // Clients overwrite keys 0..<150, delete 150..<250, and add new keys, while the
        // copier walks the same keys.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<150 { _ = try await mirror.put(MirrorFixture.key(i), data: MirrorFixture.bytes(i, "v2"), contentType: "text/v2", metadata: [:]) }
            }
            group.addTask {
                for i in 150..<250 { try await mirror.delete(MirrorFixture.key(i)) }
            }
            group.addTask {
                for i in count..<(count + 50) { _ = try await mirror.put(MirrorFixture.key(i), data: MirrorFixture.bytes(i, "v3"), contentType: nil, metadata: [:]) }
            }
            try await group.waitForAll()
        }
        try await Self.ended(mirror)
        #expect(mirror.progress.finished && mirror.progress.failed == 0)
        for backend in [fixture.new, fixture.old, mirror as any ObjectStorage] {
            for i in 0..<(count + 50) {
                let key = MirrorFixture.key(i)
                switch i {
                case 0..<150: #expect(try await backend.get(key).data == MirrorFixture.bytes(i, "v2"), "\(key)")
                case 150..<250: await #expect(throws: PlugboardError.self, "\(key) came back") { _ = try await backend.head(key) }
                case 250..<count: #expect(try await backend.get(key).data == MirrorFixture.bytes(i), "\(key)")
                default: #expect(try await backend.get(key).data == MirrorFixture.bytes(i, "v3"), "\(key)")
                }
            }
        }
        await mirror.stop()
    }

    @Test func aDeleteWhileItsKeyIsBeingCopied_waitsForTheCopy_andTheKeyStaysDeleted() async throws {
        let (fixture, gated, mirror) = try await Self.copying(MirrorFixture.key(1), of: 3)
        // The copier has read key 1 and holds it: the delete waits.
        let delete = Task { try await mirror.delete(MirrorFixture.key(1)) }
        let put = Task { _ = try await mirror.put(MirrorFixture.key(2), data: [42], contentType: nil, metadata: [:]) }
        try await put.value
        gated.release()
        try await delete.value
        try await Self.ended(mirror)
        await #expect(throws: PlugboardError.self) { _ = try await fixture.new.head(MirrorFixture.key(1)) }
        await #expect(throws: PlugboardError.self) { _ = try await mirror.head(MirrorFixture.key(1)) }
        #expect(try await fixture.new.get(MirrorFixture.key(2)).data == [42], "a key written first is not copied over")
        #expect(try await fixture.new.get(MirrorFixture.key(0)).data == MirrorFixture.bytes(0))
        await mirror.stop()
    }

    @Test func aRestartMidCopy_resumesAfterTheLastWholePage() async throws {
        let (fixture, gated, first) = try await Self.copying(MirrorFixture.key(55), of: 100, pageSize: 10)
        await first.stop()
        #expect(!first.progress.finished)
        #expect(first.progress.examined == 50, "five whole pages before the stop")

        gated.release()
        let second = fixture.mirror(concurrency: 3, pageSize: 10)
        try await second.start()
        try await Self.ended(second)
        let progress = second.progress
        #expect(progress.finished && progress.examinedBefore == 50 && progress.examined == 50, "\(progress)")
        #expect(fixture.log.contains(.info, "mirror copy resumed"))
        for i in 0..<100 {
            #expect(try await fixture.new.get(MirrorFixture.key(i)).data == MirrorFixture.bytes(i))
        }
        await second.stop()
    }
}

extension MirrorCopierTests {
    @Test func progress_isInTheMetrics_withTheFinishedGauge() async throws {
        let fixture = MirrorFixture()
        try await fixture.fill(fixture.old, count: 30)
        let mirror = fixture.mirror(pageSize: 7)
        let before = Dictionary(uniqueKeysWithValues: mirror.metricSamples().map { ($0.name, $0.value) })
        #expect(before["plugboard_mirror_finished"] == 0)
        try await mirror.start()
        try await Self.ended(mirror)
        let samples = mirror.metricSamples()
        let values = Dictionary(uniqueKeysWithValues: samples.map { ($0.name, $0.value) })
        #expect(values["plugboard_mirror_objects_copied_total"] == 30)
        #expect(values["plugboard_mirror_objects_examined_total"] == 30)
        #expect(values["plugboard_mirror_finished"] == 1)
        #expect(samples.allSatisfy { $0.labels == ["plugin": "Mirror", "from": "Old", "to": "New"] })
        #expect(samples.filter { $0.kind == .counter }.allSatisfy { $0.name.hasSuffix("_total") })
        await mirror.stop()
    }
}

extension MirrorCopierTests {
    /// A hot swap that rebuilds the mirror: the retiring generation's copier still holds a
    /// key when a client deletes it through the new generation's mirror.
    @Test func theFence_isSharedByTheGenerationsOfOneMigration() async throws {
        let (fixture, gated, retiring) = try await Self.copying(MirrorFixture.key(1), of: 3)
        let serving = fixture.mirror()
        let delete = Task { try await serving.delete(MirrorFixture.key(1)) }
        gated.release()
        try await delete.value
        try await Self.ended(retiring)
        await #expect(throws: PlugboardError.self, "the retiring copier brought it back") {
            _ = try await serving.head(MirrorFixture.key(1))
        }
        await retiring.stop()
    }
}
