#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import Testing

/// FileStorage keeps its root folder open between operations and opens it again from its
/// path at most a second later: a root replaced under a running storage is the one used
/// within that second, and a root that is gone fails operations instead of serving a
/// deleted folder.
@Suite struct FileStorageHeldRootTests {
    @Test func aRootReplacedUnderARunningStorage_isUsedWithinASecond() async throws {
        let fixture = FileStorageFixture("filestorage-held-root")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        _ = try await storage.put("old", data: Array("first root".utf8), contentType: "text/plain", metadata: [:])

        // The layout moved aside and a fresh one put in its place (as a restore would).
        try #require(rename(fixture.root, "\(fixture.sandbox)/store/root-before") == 0, "\(String(cString: strerror(errno)))")
        for folder in [fixture.root, fixture.objectsFolder, fixture.temporaryFolder] {
            try #require(mkdir(folder, 0o700) == 0, "\(String(cString: strerror(errno)))")
        }
        // Past the reopen interval (plus the coarse clock's few milliseconds).
        try await Task.sleep(for: .milliseconds(1_300))

        await #expect(throws: PlugboardError.self) { try await storage.get("old") }
        _ = try await storage.put("new", data: Array("second root".utf8), contentType: "text/plain", metadata: [:])
        #expect(try await storage.get("new").data == Array("second root".utf8))
        #expect(PluginFixtures.paths(under: fixture.objectsFolder).count == 1)
        // The first root kept what it had, and got nothing of the second's.
        #expect(PluginFixtures.paths(under: "\(fixture.sandbox)/store/root-before/objects").count == 1)
    }

    @Test func aRootRemovedUnderARunningStorage_failsOperationsNamingIt() async throws {
        let fixture = FileStorageFixture("filestorage-root-gone")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        _ = try await storage.put("k", data: [1], contentType: nil, metadata: [:])
        PluginFixtures.removeTree(fixture.root)
        try await Task.sleep(for: .milliseconds(1_300))

        let put = await #expect(throws: PlugboardError.self) {
            try await storage.put("k2", data: [2], contentType: nil, metadata: [:])
        }
        #expect(put?.code == .storageFailed, "\(String(describing: put))")
        #expect(put?.message.contains("root") == true || put?.detail?.contains("ENOENT") == true, "\(String(describing: put))")
        // Nothing was recreated behind the operator's back.
        #expect(PluginFixtures.status(fixture.root) == nil)
    }
}
