#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import Testing

/// How FileStorage maps keys to files, checked on the file system: nothing outside the
/// root, every valid key a file of its own.
@Suite struct FileStorageKeyLayoutTests {
    @Test func keysThatLookLikePaths_stayInsideTheRoot() async throws {
        let fixture = FileStorageFixture("filestorage-escape")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let passwd = PluginFixtures.status("/etc/passwd")
        let outside = "/tmp/filestorage-escape-\(getpid())"
        let keys = [
            "../x", "/etc/passwd", "a/../../b", "..", ".", "../../escape", "/", "//", "./x",
            "../../../../../../..\(outside)", "..\\..\\x", "~/x", "x/../../../y", "\(fixture.sandbox)/planted",
            String(repeating: "../", count: 340), "../" + String(repeating: "a", count: 1021),
        ]
        for key in keys {
            _ = try await storage.put(key, data: Array(key.utf8), contentType: nil, metadata: [:])
        }
        for key in keys {
            #expect(try await storage.get(key).data == Array(key.utf8), "key \(key)")
        }

        // Nothing was written outside the root: the sandbox holds only store/root/...
        for path in PluginFixtures.paths(under: fixture.sandbox) {
            #expect(path == "\(fixture.sandbox)/store" || path == fixture.root || path.hasPrefix(fixture.root + "/"),
                    "\(path) is outside the root")
        }
        #expect(PluginFixtures.status(outside) == nil)
        #expect(PluginFixtures.status("\(fixture.sandbox)/planted") == nil)
        #expect(PluginFixtures.status("/etc/passwd")?.st_mtim.tv_sec == passwd?.st_mtim.tv_sec)
        #expect(PluginFixtures.status("/etc/passwd")?.st_size == passwd?.st_size)

        // Inside, every name is hex digits (a folder) or "_" and hex digits (a file), never
        // longer than NAME_MAX, and every file is a regular file.
        let objectPaths = PluginFixtures.paths(under: fixture.objectsFolder)
        var files = 0
        for path in objectPaths {
            let name = String(path.split(separator: "/").last ?? "")
            #expect(name.utf8.count <= 255)
            #expect(name.utf8.allSatisfy { "0123456789abcdef_".utf8.contains($0) }, "\(name)")
            if name.hasPrefix("_") {
                #expect(PluginFixtures.status(path).map { $0.st_mode & S_IFMT == S_IFREG } == true)
                files += 1
            }
        }
        #expect(files == keys.count)

        for key in keys { try await storage.delete(key) }
        #expect(PluginFixtures.paths(under: fixture.objectsFolder) == [])
    }

    @Test func aAndASlashB_areTwoFiles_andEachSurvivesTheOthersDelete() async throws {
        let fixture = FileStorageFixture("filestorage-a-ab")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        _ = try await storage.put("a/b", data: [2], contentType: nil, metadata: [:])
        _ = try await storage.put("a", data: [1], contentType: nil, metadata: [:])
        let fileA = "\(fixture.objectsFolder)/_\(FileStorageFixture.hex("a"))"
        let fileAB = "\(fixture.objectsFolder)/_\(FileStorageFixture.hex("a/b"))"
        #expect(PluginFixtures.status(fileA).map { $0.st_mode & S_IFMT == S_IFREG } == true)
        #expect(PluginFixtures.status(fileAB).map { $0.st_mode & S_IFMT == S_IFREG } == true)
        #expect(try await storage.get("a").data == [1])
        #expect(try await storage.get("a/b").data == [2])

        try await storage.delete("a")
        #expect(try await storage.get("a/b").data == [2])
        _ = try await storage.put("a", data: [3], contentType: nil, metadata: [:])
        try await storage.delete("a/b")
        #expect(try await storage.get("a").data == [3])
        #expect(try await storage.list(prefix: "a", limit: 10, continuationToken: nil).objects.map(\.key) == ["a"])
    }

    @Test(arguments: [
        String(repeating: "k", count: 1024),
        String(repeating: "\u{1F600}", count: 256),
        String(repeating: "\u{E9}", count: 512),
    ])
    func aKeyOf1024BytesWithoutSlash_isStoredListedAndDeleted(key: String) async throws {
        #expect(key.utf8.count == 1024)
        let fixture = FileStorageFixture("filestorage-long")
        defer { fixture.remove() }
        let storage = try await fixture.storage()
        let shorter = String(key.dropLast())
        _ = try await storage.put(key, data: [1], contentType: nil, metadata: [:])
        _ = try await storage.put(shorter, data: [2], contentType: nil, metadata: [:])
        #expect(try await storage.get(key).data == [1])
        #expect(try await storage.get(shorter).data == [2])
        let listed = try await storage.list(prefix: "", limit: 10, continuationToken: nil).objects.map(\.key)
        #expect(listed.map { Array($0.utf8) } == [Array(shorter.utf8), Array(key.utf8)])

        // 2048 hex digits: eight folders of 250 and a file of 48, each name within NAME_MAX.
        let paths = PluginFixtures.paths(under: fixture.objectsFolder)
        #expect(paths.allSatisfy { $0.split(separator: "/").last.map { $0.utf8.count <= 255 } == true })
        #expect(paths.contains { $0.hasSuffix("/_" + String(FileStorageFixture.hex(key).suffix(48))) })

        try await storage.delete(key)
        try await storage.delete(shorter)
        await #expect(throws: PlugboardError.self) { try await storage.head(key) }
        // The emptied folders went with the objects.
        #expect(PluginFixtures.paths(under: fixture.objectsFolder) == [])
    }

    /// Deletes remove emptied folders while puts of other keys in them create them again:
    /// a put must retry, never fail, and every object written last must be there.
    @Test func concurrentPutsAndDeletes_ofLongKeysSharingFolders_neverFail() async throws {
        let fixture = FileStorageFixture("filestorage-folder-race")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        let stem = String(repeating: "s", count: 300)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<40 {
                        let key = "\(stem)/\(task)"
                        _ = try await storage.put(key, data: [UInt8(round)], contentType: nil, metadata: [:])
                        if round < 39 { try await storage.delete(key) }
                    }
                }
            }
            try await group.waitForAll()
        }
        for task in 0..<8 {
            #expect(try await storage.get("\(stem)/\(task)").data == [39])
        }
        #expect(try await storage.list(prefix: stem, limit: 100, continuationToken: nil).objects.count == 8)
    }
}
