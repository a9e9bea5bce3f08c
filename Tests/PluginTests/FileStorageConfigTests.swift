#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport
import Testing

/// FileStorage's config and root folder: what it creates, what it refuses, and how.
@Suite struct FileStorageConfigTests {
    /// The error a failed load reports, or the error it wraps (a managed service's start
    /// failure arrives as `container.start_failed` around the plugin's own error).
    func rootCause(_ error: PlugboardError?) -> PlugboardError? {
        guard let error else { return nil }
        if error.code == .startFailed, let inner = error.underlying as? PlugboardError { return inner }
        return error
    }

    @Test(arguments: [
        ([:], "config.root"),
        (["root": ConfigValue.integer(3)], "config.root"),
        (["root": .string("")], "config.root"),
        (["root": .string("/tmp/a\u{0}b")], "config.root"),
        (["root": .string("/tmp/" + String(repeating: "x", count: 1100))], "config.root"),
        (["root": .string("/tmp/x"), "fsync": .string("yes")], "config.fsync"),
        (["root": .string("/tmp/x"), "rooot": .string("/tmp/y")], "config.rooot"),
    ] as [([String: ConfigValue], String)])
    func badConfig_isRefused_namingTheKey(config: [String: ConfigValue], key: String) async throws {
        let loaded = try await PluginFixtures.load("FileStorage", config: config)
        #expect(loaded.record.state == .failed)
        #expect(loaded.record.error?.code == .configInvalid)
        #expect(loaded.record.error?.message.contains(key) == true, "\(String(describing: loaded.record.error))")
        #expect(throws: PlugboardError.self) { try loaded.storage() }
    }

    @Test func aMissingRoot_isCreated_withEveryMissingFolderMode0700() async throws {
        let fixture = FileStorageFixture("filestorage-create")
        defer { fixture.remove() }
        #expect(PluginFixtures.status("\(fixture.sandbox)/store") == nil)
        let loaded = try await fixture.load()
        #expect(loaded.record.state == .active, "\(String(describing: loaded.record.error))")
        for folder in ["\(fixture.sandbox)/store", fixture.root, fixture.objectsFolder, fixture.temporaryFolder] {
            let st = PluginFixtures.status(folder)
            #expect(st.map { $0.st_mode & S_IFMT == S_IFDIR } == true, "\(folder)")
            #expect(st.map { $0.st_mode & 0o777 } == 0o700, "\(folder)")
        }
        let marker = try PluginFixtures.readAll("\(fixture.root)/.plugboard-filestorage")
        #expect(String(decoding: marker, as: UTF8.self) == "plugboard-filestorage 1\n")
    }

    @Test func aRootThatIsAFile_isRefused_namingThePath() async throws {
        let fixture = FileStorageFixture("filestorage-file-root")
        defer { fixture.remove() }
        mkdir("\(fixture.sandbox)/store", 0o700)
        try PluginFixtures.write(Array("not a folder".utf8), to: fixture.root)
        let loaded = try await fixture.load()
        #expect(loaded.record.state == .failed)
        let cause = rootCause(loaded.record.error)
        #expect(cause?.code == .configInvalid, "\(String(describing: loaded.record.error))")
        #expect(cause?.message.contains(fixture.root) == true)
        #expect(cause?.detail?.contains("regular file") == true)
        #expect(throws: PlugboardError.self) { try loaded.storage() }
    }

    @Test func aRootBelowAFile_isRefused_namingTheFile() async throws {
        let fixture = FileStorageFixture("filestorage-file-parent")
        defer { fixture.remove() }
        try PluginFixtures.write([1], to: "\(fixture.sandbox)/store")
        let loaded = try await fixture.load()
        let cause = rootCause(loaded.record.error)
        #expect(cause?.code == .configInvalid, "\(String(describing: loaded.record.error))")
        #expect(cause?.message.contains("\(fixture.sandbox)/store") == true)
    }

    @Test func aFolderWithOtherFiles_isRefused_ratherThanTurnedIntoAStore() async throws {
        let fixture = FileStorageFixture("filestorage-foreign")
        defer { fixture.remove() }
        mkdir("\(fixture.sandbox)/store", 0o700)
        mkdir(fixture.root, 0o700)
        try PluginFixtures.write(Array("mine".utf8), to: "\(fixture.root)/notes.txt")
        let loaded = try await fixture.load()
        let cause = rootCause(loaded.record.error)
        #expect(cause?.code == .configInvalid, "\(String(describing: loaded.record.error))")
        #expect(cause?.message.contains(fixture.root) == true)
        #expect(cause?.detail?.contains("notes.txt") == true)
        #expect(PluginFixtures.status(fixture.objectsFolder) == nil)
    }

    @Test func aRootOfAnotherFormat_isRefused() async throws {
        let fixture = FileStorageFixture("filestorage-format")
        defer { fixture.remove() }
        _ = try await fixture.storage()
        try PluginFixtures.write(Array("plugboard-filestorage 2\n".utf8), to: "\(fixture.root)/.plugboard-filestorage")
        let loaded = try await fixture.load()
        let cause = rootCause(loaded.record.error)
        #expect(cause?.code == .configInvalid, "\(String(describing: loaded.record.error))")
        #expect(cause?.detail?.contains("plugboard-filestorage 2") == true)
    }

    @Test func aRelativeRoot_isResolvedAgainstTheWorkingDirectory() async throws {
        let sandbox = PluginFixtures.temporaryFolder("filestorage-relative")
        defer { PluginFixtures.removeTree(sandbox) }
        // A relative path from the working directory to the sandbox, through "/".
        let depth = PluginFixtures.currentDirectory.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + String(sandbox.dropFirst()) + "/./rel"
        let storage = try await PluginFixtures.loadStorage("FileStorage", config: ["root": .string(relative)])
        _ = try await storage.put("k", data: [7], contentType: nil, metadata: [:])
        #expect(PluginFixtures.status("\(sandbox)/rel/objects/_\(FileStorageFixture.hex("k"))") != nil)
    }

    @Test func fsyncOff_stillStoresAndReads() async throws {
        let fixture = FileStorageFixture("filestorage-nosync")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        _ = try await storage.put("k", data: [1, 2], contentType: "a/b", metadata: ["x": "y"])
        let object = try await storage.get("k")
        #expect(object.data == [1, 2])
        #expect(object.info.metadata == ["x": "y"])
    }

    /// Permission bits do not stop root, so the plugin runs as another user (AnotherUser:
    /// `nobody` as root, as in CI, else this user): the built `plugboard` loading it in a
    /// child, on a root inside a folder that user owns and may not write.
    @Test func anUnwritableRoot_failsWithAccessDenied() async throws {
        let fixture = FileStorageFixture("filestorage-readonly")
        defer { chmod("\(fixture.sandbox)/store", 0o700); fixture.remove() }
        let (store, cache, manifest) = ("\(fixture.sandbox)/store", "\(fixture.sandbox)/cache", "\(fixture.sandbox)/plugins.json")
        mkdir(store, 0o500)
        mkdir(cache, 0o700)
        try AnotherUser.own(store)
        try AnotherUser.own(cache)
        let text = #"{"schemaVersion": 1, "plugins": [{"name": "Files", "product": "FileStorage", "required": true, "config": {"root": "\#(fixture.root)"}}]}"#
        try PluginFixtures.write(Array(text.utf8), to: manifest)
        let environment = ChildProcess.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let run = try await OwnThread.run {
            Result { () throws(ChildProcessError) in
                try AnotherUser.run("\(BuildProducts.folder)/plugboard",
                                    ["storage", "list", "--json", "--manifest", manifest, "--cache-dir", cache],
                                    environment: environment, outputIn: fixture.sandbox)
            }
        }.get()
        #expect(run.exitStatus == 1, "\(run)")
        #expect(run.standardOutput.contains(#""code": "host.required_plugin_failed""#), "\(run)")
        #expect(run.standardOutput.contains("storage.access_denied"), "\(run)")
    }
}
