import PlugboardHost
import PlugboardJSON
import Testing

/// PLUGBOARD_MANIFEST, PLUGBOARD_ENV, the manifest's `environment`, and the default cache.
@Suite struct EnvironmentTests {
    /// "Mem" in every environment, "Prod" only in production, "Test" only in testing.
    static let manifest = ManifestText.make([
        ManifestText.memory,
        #"{"name": "Prod", "product": "MemoryStorage", "environments": ["production"]}"#,
        #"{"name": "Test", "product": "MemoryStorage", "environments": ["testing"]}"#,
    ])

    /// The names of the active plugins, from `plugins --json`.
    func active(_ result: CommandResult, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> [String] {
        expectRun(result, status: 0, sourceLocation: sourceLocation)
        return try #require(try result.json().elements, sourceLocation: sourceLocation)
            .filter { $0["state"]?.string == "active" }.compactMap { $0["name"]?.string }
    }

    @Test func manifest_fromTheVariable_andTheFlagWins() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.makeFolder("etc")
        try sandbox.write("etc/a.json", ManifestText.make([ManifestText.memory]))
        try sandbox.write("etc/b.json", ManifestText.make([#"{"name": "Other", "product": "MemoryStorage"}"#]))
        let fromVariable = await sandbox.run(["plugins", "--json"], environment: ["PLUGBOARD_MANIFEST": "etc/a.json"])
        #expect(try active(fromVariable) == ["Mem"])
        let fromFlag = await sandbox.run(["plugins", "--json", "--manifest", "etc/b.json"],
                                   environment: ["PLUGBOARD_MANIFEST": "etc/a.json"])
        #expect(try active(fromFlag) == ["Other"])
        // A variable naming a missing file is a missing manifest.
        expectRun(await sandbox.run(["plugins"], environment: ["PLUGBOARD_MANIFEST": "etc/none.json"]), status: 2,
                  stderr: .contains("etc/none.json"))
        // Without either, ./plugins.json; an empty variable counts as unset.
        try sandbox.write("plugins.json", ManifestText.make([#"{"name": "Default", "product": "MemoryStorage"}"#]))
        #expect(try active(await sandbox.run(["plugins", "--json"])) == ["Default"])
        #expect(try active(await sandbox.run(["plugins", "--json"], environment: ["PLUGBOARD_MANIFEST": ""])) == ["Default"])
    }

    @Test func environment_flagThenVariableThenManifestThenDevelopment() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", Self.manifest)
        try sandbox.write("testing.json", ManifestText.make([
            ManifestText.memory,
            #"{"name": "Prod", "product": "MemoryStorage", "environments": ["production"]}"#,
            #"{"name": "Test", "product": "MemoryStorage", "environments": ["testing"]}"#,
        ], environment: "testing"))
        // Nothing said: development.
        #expect(try active(await sandbox.run(["plugins", "--json"])) == ["Mem"])
        #expect(try active(await sandbox.run(["plugins", "--json"], environment: ["PLUGBOARD_ENV": ""])) == ["Mem"])
        // The manifest's environment.
        #expect(try active(await sandbox.run(["plugins", "--json", "--manifest", "testing.json"])) == ["Mem", "Test"])
        // PLUGBOARD_ENV over the manifest's.
        #expect(try active(await sandbox.run(["plugins", "--json", "--manifest", "testing.json"],
                                       environment: ["PLUGBOARD_ENV": "production"])) == ["Mem", "Prod"])
        // --env over PLUGBOARD_ENV.
        #expect(try active(await sandbox.run(["plugins", "--json", "--env", "testing"],
                                       environment: ["PLUGBOARD_ENV": "production"])) == ["Mem", "Test"])
        // The environment is reported where it matters.
        expectRun(await sandbox.run(["check"], environment: ["PLUGBOARD_ENV": "production"]), status: 0,
                  stderr: .exactly("check passed: 2 plugins active in production\n"))
        // A wrong PLUGBOARD_ENV is bad usage.
        expectRun(await sandbox.run(["plugins"], environment: ["PLUGBOARD_ENV": "prod"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown environment \"prod\"", "Did you mean \"production\"?"))
    }

    /// Without --cache-dir the plugin cache is $XDG_CACHE_HOME/plugboard; with it, the
    /// given folder.
    @Test func cacheDirectory_defaultsToXDGCacheHome() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        try sandbox.makeFolder("xdg")
        expectRun(await sandbox.run(["check"], environment: ["XDG_CACHE_HOME": sandbox.path("xdg")], cacheDir: false),
                  status: 0)
        #expect(sandbox.exists("xdg/plugboard"))
        #expect(!sandbox.exists(sandbox.cacheDirectory))
        expectRun(await sandbox.run(["check", "--cache-dir", sandbox.path("mine")],
                              environment: ["XDG_CACHE_HOME": sandbox.path("xdg2")]), status: 0)
        #expect(sandbox.exists("mine"))
        #expect(!sandbox.exists("xdg2"))
    }
}
