#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import Testing

/// FileStorage follows no symbolic link below its root: a link put in place of `objects/`,
/// `tmp/` or a folder inside them makes writes fail with a clear error, and nothing lands
/// where the link points. A root whose `objects/` or `tmp/` is a link is refused at start.
@Suite struct FileStorageSymlinkTests {
    /// A started store with one object, and a folder outside the root for links to point at.
    struct Store {
        let fixture = FileStorageFixture("filestorage-links")
        var elsewhere: String { "\(fixture.sandbox)/elsewhere" }

        func start() async throws -> any ObjectStorage {
            mkdir(elsewhere, 0o700)
            let storage = try await fixture.storage(fsync: false)
            _ = try await storage.put("before", data: Array("kept".utf8), contentType: "text/plain", metadata: [:])
            return storage
        }

        /// Moves the folder at `path` aside (to `moved` beside it, inside the root) and puts
        /// a link to `elsewhere` there.
        func replaceWithLink(_ path: String) throws {
            try #require(rename(path, PluginFixtures.parent(path) + "/moved") == 0, "\(String(cString: strerror(errno)))")
            try #require(symlink(elsewhere, path) == 0, "\(String(cString: strerror(errno)))")
        }

        var landedElsewhere: [String] { PluginFixtures.paths(under: elsewhere) }
    }

    func expectLinkRefusal(_ error: PlugboardError?, naming path: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        #expect(error?.code == .storageFailed, "\(String(describing: error))", sourceLocation: sourceLocation)
        // Quoted as FileStorage quotes paths: cut at 120 characters.
        #expect(error?.message.hasSuffix("\(PlugboardError.quoted(path, maxCharacters: 120)) is a symbolic link") == true,
                "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.detail?.contains("ELOOP") == true, sourceLocation: sourceLocation)
        #expect(error?.hint?.contains("symbolic link") == true, sourceLocation: sourceLocation)
    }

    /// A put of `key` fails naming the link at `path`, and writes nothing where it points.
    func expectWriteRefused(_ storage: any ObjectStorage, _ key: String, naming path: String, in store: Store,
                            sourceLocation: Testing.SourceLocation = #_sourceLocation) async {
        let put = await #expect(throws: PlugboardError.self, sourceLocation: sourceLocation) {
            try await storage.put(key, data: Array("lost".utf8), contentType: "text/plain", metadata: [:])
        }
        expectLinkRefusal(put, naming: path, sourceLocation: sourceLocation)
        #expect(store.landedElsewhere == [], sourceLocation: sourceLocation)
    }

    @Test func objectsReplacedByALink_writesFail_andNothingLandsOutsideTheRoot() async throws {
        let store = Store()
        defer { store.fixture.remove() }
        let storage = try await store.start()
        try store.replaceWithLink(store.fixture.objectsFolder)
        await expectWriteRefused(storage, "after", naming: store.fixture.objectsFolder, in: store)
        // Reads, deletes and listings do not go through the link either: an error, not
        // another folder's objects.
        expectLinkRefusal(await #expect(throws: PlugboardError.self) { try await storage.get("before") },
                          naming: store.fixture.objectsFolder)
        expectLinkRefusal(await #expect(throws: PlugboardError.self) { try await storage.delete("before") },
                          naming: store.fixture.objectsFolder)
        expectLinkRefusal(await #expect(throws: PlugboardError.self) {
            try await storage.list(prefix: "", limit: 10, continuationToken: nil)
        }, naming: store.fixture.objectsFolder)
        #expect(store.landedElsewhere == [])
        // The temporary file of the refused write was cleaned up.
        #expect(PluginFixtures.paths(under: store.fixture.temporaryFolder) == [])
    }

    @Test func tmpReplacedByALink_writesFail_andNothingLandsOutsideTheRoot() async throws {
        let store = Store()
        defer { store.fixture.remove() }
        let storage = try await store.start()
        try store.replaceWithLink(store.fixture.temporaryFolder)
        await expectWriteRefused(storage, "after", naming: store.fixture.temporaryFolder, in: store)
        // Objects already stored are still read (their folder is no link).
        #expect(try await storage.get("before").data == Array("kept".utf8))
    }

    @Test func aKeyFolderReplacedByALink_writesFail_andListingsSkipIt() async throws {
        let store = Store()
        defer { store.fixture.remove() }
        let storage = try await store.start()
        // Keys over 125 bytes live in a folder named by their first 125 bytes.
        let stem = String(repeating: "k", count: 125)
        _ = try await storage.put(stem + "1", data: Array("one".utf8), contentType: "text/plain", metadata: [:])
        let folder = "\(store.fixture.objectsFolder)/\(FileStorageFixture.hex(stem))"
        #expect(PluginFixtures.status(folder).map { $0.st_mode & S_IFMT == S_IFDIR } == true)
        try store.replaceWithLink(folder)
        await expectWriteRefused(storage, stem + "2", naming: folder, in: store)
        let listed = try await storage.list(prefix: "", limit: 10, continuationToken: nil).objects.map(\.key)
        #expect(listed == ["before"])
    }

    @Test(arguments: ["objects", "tmp"])
    func aRootWhoseFolderIsALink_isRefusedAtStart_namingIt(folder: String) async throws {
        let store = Store()
        defer { store.fixture.remove() }
        _ = try await store.start()
        try store.replaceWithLink("\(store.fixture.root)/\(folder)")

        let loaded = try await store.fixture.load()
        #expect(loaded.record.state == .failed)
        let error = loaded.record.error.flatMap { $0.underlying as? PlugboardError } ?? loaded.record.error
        #expect(error?.code == .configInvalid, "\(String(describing: error))")
        #expect(error?.message.contains("holds a symbolic link where its folder \"\(folder)\" belongs") == true,
                "\(String(describing: error))")
        #expect(error?.detail?.contains("a symbolic link to \"\(store.elsewhere)\"") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("Replace the link with a real folder") == true)
        #expect(store.landedElsewhere == [])
    }
}
