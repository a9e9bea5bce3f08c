import PlugboardHost
import Testing

/// `plugboard check` loads and starts every plugin to see that it works, and leaves the
/// file system as it found it: FileStorage's root is checked, not created (the plugins
/// are told through `PluginRegistrar.checkOnly`), while a command that uses the storage
/// still creates it.
@Suite struct CheckLeavesNoTraceTests {
    /// A sandbox whose `app/plugins.json` binds FileStorage over `app/<root>`.
    static func sandbox(root: String = "data") throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.makeFolder("app")
        try sandbox.write("app/plugins.json", ManifestText.make([
            #"{"name": "Files", "product": "FileStorage", "config": {"root": "\#(root)"}}"#,
        ]))
        return sandbox
    }

    @Test(arguments: [["check"], ["check", "--in-process"]])
    func check_passes_andCreatesNoFolderBesideTheManifest(_ command: [String]) async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        let before = sandbox.entries("app")
        #expect(before == ["plugins.json"])
        expectRun(await sandbox.run(command + ["--manifest", "app/plugins.json"]), status: 0,
                  stdout: .contains("Files", "active"), stderr: .contains("check passed: 1 plugin active"))
        #expect(sandbox.entries("app") == before)
    }

    @Test func check_ofANestedRoot_createsNoneOfItsFolders() async throws {
        let sandbox = try Self.sandbox(root: "var/lib/objects")
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["check", "--manifest", "app/plugins.json"]), status: 0, stderr: .contains("check passed"))
        #expect(sandbox.entries("app") == ["plugins.json"])
    }

    @Test func check_ofAnExistingRoot_writesNothingIntoIt() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        try sandbox.makeFolder("app/data")
        expectRun(await sandbox.run(["check", "--manifest", "app/plugins.json"]), status: 0, stderr: .contains("check passed"))
        #expect(sandbox.entries("app/data").isEmpty)
    }

    /// What start refuses, check still refuses: a root that is a file.
    @Test func check_ofARootThatIsAFile_fails_andLeavesTheFile() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        try sandbox.write("app/data", "not a folder\n")
        let result = await sandbox.run(["check", "--manifest", "app/plugins.json"])
        expectRun(result, status: 1, stdout: .contains("Files", "failed", "plugin.config_invalid", "is not a folder"))
        #expect(sandbox.entries("app") == ["data", "plugins.json"])
        #expect(try sandbox.read("app/data") == Array("not a folder\n".utf8))
    }

    /// What check leaves alone, a load that uses the storage creates, as it always did.
    @Test func aStorageCommandAfterCheck_createsTheRoot() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["check", "--manifest", "app/plugins.json"]), status: 0)
        #expect(!sandbox.exists("app/data"))
        expectRun(await sandbox.run(["storage", "list", "--manifest", "app/plugins.json"]), status: 0)
        #expect(sandbox.entries("app/data").contains("objects"))
    }
}
