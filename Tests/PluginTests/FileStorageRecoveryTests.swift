#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import Testing

/// What FileStorage leaves behind when a writer dies, and what it does with files it did
/// not write whole.
@Suite struct FileStorageRecoveryTests {
    /// Checks every object under the root: listed once, readable, data matching its size
    /// and ETag, and `get`'s info equal to `head`'s and to the listing's.
    func verifyEveryObject(_ storage: any ObjectStorage) async throws -> Int {
        var token: String?
        var count = 0
        repeat {
            let page = try await storage.list(prefix: "", limit: 7, continuationToken: token)
            for info in page.objects {
                let object: StoredObject
                do {
                    object = try await storage.get(info.key)
                } catch let error as PlugboardError where error.code == .storageNotFound {
                    continue  // deleted since the listing (only while a writer still runs)
                }
                #expect(object.data.count == object.info.size, "\(info.key)")
                #expect(try FileStorageFixture.md5(object.data) == object.info.etag, "\(info.key)")
                #expect(object.info.metadata["writer"] != nil, "\(info.key)")
                count += 1
            }
            token = page.nextContinuationToken
        } while token != nil
        return count
    }

    @Test(.timeLimit(.minutes(1)))
    func aWriterKilledWithSIGKILL_leavesEveryObjectWhole() async throws {
        let fixture = FileStorageFixture("filestorage-crash")
        defer { fixture.remove() }
        // This process loads the plugin on the root first (creating it), and reads while
        // the child writes: a reader in another process never sees a half-written object.
        let reader = try await fixture.storage()
        let writer = "\(PluginFixtures.productsFolder)/filestorage-crash-writer"
        let log = "\(fixture.sandbox)/writer.log"
        let pid = try PluginFixtures.spawn(writer, [fixture.root, "\(fixture.sandbox)/writer-cache"], output: log,
                                           extraEnvironment: ["SWIFT_BACKTRACE": "enable=no"])
        var killed = false
        defer {
            if !killed {
                kill(pid, SIGKILL)
                _ = PluginFixtures.wait(pid)
            }
        }

        // Wait until the child has written a few objects, then let it run a while longer.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        var seen = 0
        while seen < 8 && clock.now < deadline {
            seen = try await reader.list(prefix: "crash/", limit: 100, continuationToken: nil).objects.count
            try await Task.sleep(for: .milliseconds(20))
        }
        let childLog = String(decoding: (try? PluginFixtures.readAll(log)) ?? [], as: UTF8.self)
        try #require(seen >= 8, "the writer did not write: \(childLog)")
        let busyUntil = clock.now + .milliseconds(500)
        var concurrentReads = 0
        while clock.now < busyUntil {
            concurrentReads += try await verifyEveryObject(reader)
        }
        #expect(concurrentReads > 0)

        kill(pid, SIGKILL)
        let status = PluginFixtures.wait(pid)
        killed = true
        #expect(status == 128 + SIGKILL, "the writer ended otherwise: \(String(decoding: (try? PluginFixtures.readAll(log)) ?? [], as: UTF8.self))")

        // A fresh load on the same root: every object is whole.
        let after = try await fixture.storage()
        let count = try await verifyEveryObject(after)
        #expect(count > 0)
        // Nothing but object files in objects/: the writer's unfinished files stay in tmp/.
        for path in PluginFixtures.paths(under: fixture.objectsFolder) {
            let name = path.split(separator: "/").last.map(String.init) ?? ""
            #expect(name.hasPrefix("_") || name.utf8.count == 250, "\(path)")
        }
    }

    @Test func temporaryFilesOfDeadWriters_areRemovedAtStart_butLockedOnesAreKept() async throws {
        let fixture = FileStorageFixture("filestorage-stale")
        defer { fixture.remove() }
        _ = try await fixture.storage()
        let stale = "\(fixture.temporaryFolder)/999999-dead.tmp"
        let fresh = "\(fixture.temporaryFolder)/999999-fresh.tmp"
        let locked = "\(fixture.temporaryFolder)/999999-locked.tmp"
        for path in [stale, fresh, locked] { try PluginFixtures.write([1, 2, 3], to: path, mode: 0o600) }
        let hourAgo = timeval(tv_sec: time(nil) - 3600, tv_usec: 0)
        for path in [stale, locked] { _ = utimes(path, [hourAgo, hourAgo]) }
        // "Fresh" whatever the delay before the load below: on a loaded machine more than
        // the 10 s grace period once passed between this write and the start (CI).
        let hourAhead = timeval(tv_sec: time(nil) + 3600, tv_usec: 0)
        _ = utimes(fresh, [hourAhead, hourAhead])
        let fd = open(locked, O_RDONLY)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX) == 0)

        let loaded = try await fixture.load()
        #expect(loaded.record.state == .active)
        #expect(PluginFixtures.status(stale) == nil)
        #expect(PluginFixtures.status(fresh) != nil)
        #expect(PluginFixtures.status(locked) != nil)
    }

    @Test func aDamagedObjectFile_failsGetAndHead_andIsLeftOutOfListings() async throws {
        let fixture = FileStorageFixture("filestorage-damaged")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        _ = try await storage.put("good", data: [1], contentType: nil, metadata: [:])
        _ = try await storage.put("bad", data: Array(repeating: 9, count: 100), contentType: nil, metadata: [:])
        let file = "\(fixture.objectsFolder)/_\(FileStorageFixture.hex("bad"))"
        #expect(truncate(file, 40) == 0)

        for operation in ["get", "head"] {
            let error = await #expect(throws: PlugboardError.self) {
                if operation == "get" { _ = try await storage.get("bad") } else { _ = try await storage.head("bad") }
            }
            #expect(error?.code == .storageFailed)
            #expect(error?.message.contains("damaged") == true)
            #expect(error?.message.contains(file) == true)
        }
        let listed = try await storage.list(prefix: "", limit: 10, continuationToken: nil)
        #expect(listed.objects.map(\.key) == ["good"])
        try await storage.delete("bad")
        #expect(PluginFixtures.status(file) == nil)
    }
}
