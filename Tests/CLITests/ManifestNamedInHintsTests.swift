import PlugboardHost
import Testing

/// Hints about the manifest in use name the one given (`--manifest other.json`), not the
/// default `plugins.json`: the loader's, the plugin config's (PlugboardAPI's
/// `PluginConfig`, told the manifest by the host) and the host's.
@Suite struct ManifestNamedInHintsTests {
    static func run(_ plugin: String, _ arguments: [String] = ["check"]) async throws -> CommandResult {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("other.json", ManifestText.make([plugin]))
        return await sandbox.run(arguments + ["--manifest", "other.json"])
    }

    @Test func aMissingPluginFile_isLookedForIn_theManifestGiven() async throws {
        let result = try await Self.run(#"{"name": "Gone", "path": "libGone.so"}"#)
        expectRun(result, status: 1, stdout: .containsNot(["loader.file_not_found", "Check the plugin's path in other.json"],
                                                          not: ["plugins.json"]))
    }

    @Test func aWrongPin_isSetIn_theManifestGiven() async throws {
        let result = try await Self.run(#"{"name": "Mem", "product": "MemoryStorage", "sha256": "\#(String(repeating: "0", count: 64))"}"#)
        expectRun(result, status: 1, stdout: .containsNot(["loader.checksum_mismatch", "set \"sha256\" in other.json to"],
                                                          not: ["plugins.json"]))
    }

    @Test(arguments: [["check"], ["check", "--in-process"]])
    func anUnknownConfigKey_isCorrectedIn_theManifestGiven(_ command: [String]) async throws {
        let result = try await Self.run(#"{"name": "Mem", "product": "MemoryStorage", "config": {"seeed": 1}}"#, command)
        expectRun(result, status: 1, stdout: .containsNot(["plugin.config_invalid", "in the plugin's config in other.json"],
                                                          not: ["plugins.json"]))
    }

    /// A plugin's own check of a value (MemoryStorage's range) names it as the API's do.
    @Test func aValueOutOfItsRange_isCorrectedIn_theManifestGiven() async throws {
        let result = try await Self.run(#"{"name": "Mem", "product": "MemoryStorage", "config": {"failureRate": 1.5}}"#)
        expectRun(result, status: 1, stdout: .containsNot(["plugin.config_invalid", "Correct \"failureRate\" in the plugin's config in other.json"],
                                                          not: ["plugins.json"]))
    }

    @Test func noStorageBound_isEnabledIn_theManifestGiven() async throws {
        let result = try await Self.run(#"{"name": "Mem", "product": "MemoryStorage", "enabled": false}"#, ["storage", "list"])
        expectRun(result, status: 1, stderr: .containsNot(["no ObjectStorage is bound", "for this environment in other.json"],
                                                          not: ["plugins.json"]))
    }
}
