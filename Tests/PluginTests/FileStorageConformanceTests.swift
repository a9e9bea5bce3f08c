import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import Testing

/// libFileStorage.so, loaded through the host's loader: the whole conformance suite, and
/// objects that outlive the container that wrote them.
@Suite struct FileStorageConformanceTests {
    @Test func passesTheWholeConformanceSuite_includingLargeObjectsAndConcurrentWriters() async throws {
        let fixture = FileStorageFixture("filestorage-conformance")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.result(named: "concurrent_writers")?.outcome == .passed)
        // Every rule deleted what it wrote: no object files and no folders are left.
        #expect(PluginFixtures.paths(under: fixture.objectsFolder) == [])
        #expect(PluginFixtures.paths(under: fixture.temporaryFolder) == [])
    }

    @Test func objectsPersist_acrossTwoLoadsOnTheSameRoot() async throws {
        let fixture = FileStorageFixture("filestorage-persist")
        defer { fixture.remove() }
        let first = try await fixture.storage()
        var written: [ObjectInfo] = []
        for (index, key) in ["a", "a/b", "docs/r\u{E9}sum\u{E9}.pdf", String(repeating: "z", count: 1024)].enumerated() {
            written.append(try await first.put(key, data: Array(repeating: UInt8(index), count: index * 1000),
                                               contentType: "text/x-\(index)", metadata: ["n": "\(index)", "owner": "me"]))
        }
        try await first.delete("a/b")
        written.remove(at: 1)

        let second = try await fixture.storage()
        for info in written {
            #expect(try await second.head(info.key) == info)
            let object = try await second.get(info.key)
            #expect(object.info == info)
            #expect(object.data.count == info.size)
        }
        await #expect(throws: PlugboardError.self) { try await second.get("a/b") }
        let listed = try await second.list(prefix: "", limit: 1000, continuationToken: nil)
        #expect(listed.objects == written.sorted { ObjectKey.precedes($0.key, $1.key) })
        #expect(listed.nextContinuationToken == nil)
    }
}
