import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard inspect FILE`: what a plugin file declares, without a manifest.
@Suite struct InspectTests {
    static var memoryStorage: String { "\(CommandRunner.productsFolder)/libMemoryStorage.so" }
    static var apiVersion: String { "\(PluginHeader.expected.apiMajor).\(PluginHeader.expected.apiMinor)" }

    @Test func noLoad_readsTheHeadersOnly() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["inspect", "--no-load", Self.memoryStorage])
        expectRun(result, status: 0, stdout: .containsNot([
            "file:        \(Self.memoryStorage)\n", "sha256:      ", "size:        ",
            "ABI version: \(PluginHeader.expected.abiVersion)\n", "API version: \(Self.apiVersion)\n",
            "toolchain:   clang version ", "needs:       ", "libPlugboardAPI.so",
        ], not: ["name:", "version:     ", "services:"]), stderr: .empty)
        // Nothing was copied into the cache: the file was never loaded.
        #expect(!sandbox.exists(sandbox.cacheDirectory))
    }

    @Test func noLoad_json() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["inspect", "--no-load", "--json", Self.memoryStorage])
        expectRun(result, status: 0, stderr: .empty)
        let json = try result.json()
        #expect(json.keys == ["file", "sha256", "size", "abiVersion", "apiVersion", "toolchain", "needed"])
        #expect(json["file"]?.string == Self.memoryStorage)
        #expect(json["sha256"]?.string?.count == 64)
        #expect(json["abiVersion"]?.integer == Int64(PluginHeader.expected.abiVersion))
        #expect(json["apiVersion"]?.string == Self.apiVersion)
        #expect(json["toolchain"]?.string?.hasPrefix("clang version ") == true)
        #expect(json["needed"]?.strings?.contains("libPlugboardAPI.so") == true)
    }

    @Test func loaded_addsNameVersionAndServices() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let text = await sandbox.run(["inspect", Self.memoryStorage])
        expectRun(text, status: 0, stdout: .contains(
            "ABI version: ", "API version: \(Self.apiVersion)\n", "name:        MemoryStorage\n",
            "version:     1.0.0\n", "services:    PlugboardAPI.ObjectStorage\n"), stderr: .empty)
        let json = try await sandbox.run(["inspect", "--json", Self.memoryStorage]).json()
        #expect(json.keys == ["file", "sha256", "size", "abiVersion", "apiVersion", "toolchain", "needed",
                              "name", "version", "services"])
        #expect(json["name"]?.string == "MemoryStorage")
        #expect(json["version"]?.string == "1.0.0")
        #expect(json["services"]?.strings == ["PlugboardAPI.ObjectStorage"])
    }

    /// An out-of-tree plugin, built at test time, by relative path.
    @Test func loaded_outOfTreePlugin() async throws {
        let library = try await FolderStorageFixture.path()
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        _ = try sandbox.write("libFolderStorage.so", try sandbox.read(library))
        let json = try await sandbox.run(["inspect", "--json", "libFolderStorage.so"]).json()
        #expect(json["file"]?.string?.hasSuffix("/libFolderStorage.so") == true)
        #expect(json["name"]?.string == FolderStorageFixture.name)
        #expect(json["version"]?.string == FolderStorageFixture.version)
        #expect(json["services"]?.strings == ["PlugboardAPI.ObjectStorage"])
    }

    @Test func notAPlugin_isRefused() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("libText.so", "not an ELF file\n")
        let result = await sandbox.run(["inspect", "--no-load", "--json", "libText.so"])
        expectRun(result, status: 1)
        let code = try result.json()["error"]?["code"]?.string
        #expect(code?.hasPrefix("loader.") == true || code?.hasPrefix("plugin.") == true, "\(result)")
    }
}
