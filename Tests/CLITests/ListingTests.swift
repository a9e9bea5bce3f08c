import PlugboardHost
import PlugboardJSON
import Testing

/// `check`, `plugins`, `services` and `graph` over one manifest with a plugin in each
/// state: active, rejected (missing file), disabled, skipped (another environment).
@Suite struct ListingTests {
    static let manifest = ManifestText.make([
        #"{"name": "Mem", "product": "MemoryStorage", "rank": 5}"#,
        #"{"name": "Gone", "path": "nowhere/libGone.so"}"#,
        #"{"name": "Off", "product": "MemoryStorage", "enabled": false}"#,
        #"{"name": "Stage", "product": "MemoryStorage", "environments": ["staging"], "requires": ["Mem"], "rank": 9}"#,
    ])

    func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.write("plugins.json", Self.manifest)
        return sandbox
    }

    @Test func check_printsATableOfEveryPlugin() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["check", "--log-level", "critical"])
        expectRun(result, status: 1, stderr: .exactly("check failed: 1 of the selected plugins did not load\n"))
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "PLUGIN  STATE     VERSION  SERVICES                    ERROR")
        #expect(lines[1] == "Mem     active    1.0.0    PlugboardAPI.ObjectStorage  -")
        // The table names the code; the message comes once, in the block below it.
        #expect(lines[2] == "Gone    rejected  -        -                           loader.file_not_found")
        #expect(lines[3] == "Off     disabled  -        -                           -")
        #expect(lines[4] == "Stage   skipped   -        -                           -")
        // Then the failure's detail and hint.
        #expect(result.stdout.contains("\nGone: loader.file_not_found: could not access file \""))
        #expect(result.stdout.contains("  DETAIL: The file does not exist.\n"))
        #expect(result.stdout.contains("  HINT: "))
        #expect(result.stdout.ranges(of: "could not access file").count == 1, "told more than once: \(result.stdout)")
    }

    /// `plugins` prints every plugin's state and error itself: no log line repeats the
    /// failure at the default level, and the exit reason of a required one points above.
    @Test func plugins_tellsEachFailureOnce() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            ManifestText.memory, #"{"name": "Gone", "path": "libGone.so", "required": true}"#,
        ]))
        let result = await sandbox.run(["plugins"])
        expectRun(result, status: 1, stderr: .exactly("""
            plugboard: error: required plugin "Gone" is rejected
            HINT: Its error is shown above.

            """))
        #expect(result.stdout.ranges(of: "could not access file").count == 1, "\(result.stdout)")
        // The log line is still there for whoever asks for it, with the whole story.
        let verbose = await sandbox.run(["plugins", "--log-level", "info"])
        #expect(verbose.stderr.contains("rejected plugin"), "\(verbose.stderr)")
        #expect(verbose.stderr.contains("hint="), "\(verbose.stderr)")
    }

    @Test func check_passes_whenEverySelectedPluginLoads() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            ManifestText.memory, #"{"name": "Off", "product": "MemoryStorage", "enabled": false}"#,
        ]))
        expectRun(await sandbox.run(["check"]), status: 0, stdout: .contains("Mem     active"),
                  stderr: .exactly("check passed: 1 plugin active in development\n"))
    }

    @Test func plugins_json_hasTheSpecifiedFields() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["plugins", "--json"])
        expectRun(result, status: 0)
        let list = try #require(try result.json().elements)
        #expect(list.count == 4)
        for plugin in list {
            #expect(plugin.keys == ["name", "state", "version", "path", "sha256", "services", "generation", "error", "signedBy", "isolation"])
        }
        #expect(list.map { $0["state"]?.string } == ["active", "rejected", "disabled", "skipped"])
        let mem = list[0]
        #expect(mem["name"]?.string == "Mem")
        #expect(mem["version"]?.string == "1.0.0")
        #expect(mem["path"]?.string == "\(CommandRunner.productsFolder)/libMemoryStorage.so")
        #expect(mem["sha256"]?.string?.count == 64)
        #expect(mem["services"]?.strings == ["PlugboardAPI.ObjectStorage"])
        #expect(mem["error"]?.isNull == true)
        #expect(mem["generation"]?.integer == 1)
        let gone = list[1]
        #expect(gone["version"]?.isNull == true)
        #expect(gone["path"]?.string == sandbox.path("nowhere/libGone.so"))
        #expect(gone["sha256"]?.isNull == true)
        #expect(gone["services"]?.elements?.isEmpty == true)
        #expect(gone["error"]?.keys == ["code", "message", "detail", "hint"])
        #expect(gone["error"]?["code"]?.string == "loader.file_not_found")
        #expect(list[2]["path"]?.isNull == true && list[2]["error"]?.isNull == true)
        // `check --json` prints the same array (from its preflight child) as check --in-process
        // does, each plugin with its warnings: none here (StaleBuildTests has one).
        let noWarnings = ",\n    \"warnings\": []"
        for arguments in [["check", "--json"], ["check", "--json", "--in-process"]] {
            let check = await sandbox.run(arguments)
            expectRun(check, status: 1, stdout: .contains(noWarnings))
            #expect(check.stdout.replacing(noWarnings, with: "") == result.stdout, "\(arguments)")
        }
    }

    @Test func plugins_text() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["plugins", "--log-level", "critical"]), status: 0,
                  stdout: .contains("PLUGIN  STATE     VERSION", "Mem     active    1.0.0", "Stage   skipped"),
                  stderr: .empty)
    }

    @Test func services_listsEveryRegistration() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let text = await sandbox.run(["services", "--log-level", "critical"])
        expectRun(text, status: 0, stdout: .exactly("""
            SERVICE                     NAME  RANK  SCOPE      OWNER  IMPLEMENTATION                       ACTIVE
            PlugboardAPI.ObjectStorage  -     5     singleton  Mem    MemoryStorage.FaultInjectingStorage  yes

            """), stderr: .empty)
        let result = await sandbox.run(["services", "--json"])
        expectRun(result, status: 0)
        let list = try #require(try result.json().elements)
        #expect(list.count == 1)
        let r = list[0]
        // The specified fields in order; `active` is an extra.
        #expect(r.keys == ["service", "name", "rank", "scope", "owner", "implementation", "active"])
        #expect(r["service"]?.string == "PlugboardAPI.ObjectStorage")
        #expect(r["name"]?.isNull == true)
        #expect(r["rank"]?.integer == 5)
        #expect(r["scope"]?.string == "singleton")
        #expect(r["owner"]?.string == "Mem")
        #expect(r["implementation"]?.string == "MemoryStorage.FaultInjectingStorage")
        #expect(r["active"]?.bool == true)
    }

    @Test func services_inStaging_showBothRegistrations_highestRankFirst() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["services", "--json", "--env", "staging"])
        expectRun(result, status: 0)
        let list = try #require(try result.json().elements)
        #expect(Set(list.compactMap { $0["owner"]?.string }) == ["Mem", "Stage"])
        #expect(Set(list.compactMap { $0["rank"]?.integer }) == [5, 9])
        #expect(list.allSatisfy { ["instance", "singleton", "transient", "weak"].contains($0["scope"]?.string ?? "") })
    }

    @Test func graph_dot() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let dot = """
            digraph plugboard {
              rankdir=LR;
              node [shape=box];
              "Mem" [label="Mem\\nactive"];
              "service:PlugboardAPI.ObjectStorage" [label="PlugboardAPI.ObjectStorage", shape=ellipse];
              "Mem" -> "service:PlugboardAPI.ObjectStorage" [label="provides"];
              "Gone" [label="Gone\\nrejected", style=dashed];
              "Off" [label="Off\\ndisabled", style=dashed];
              "Stage" [label="Stage\\nskipped", style=dashed];
              "Stage" -> "Mem" [label="requires", style=bold];
            }

            """
        expectRun(await sandbox.run(["graph", "--log-level", "critical"]), status: 0, stdout: .exactly(dot), stderr: .empty)
        expectRun(await sandbox.run(["graph", "--format", "dot", "--log-level", "critical"]), status: 0, stdout: .exactly(dot))
    }

    @Test func graph_json() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["graph", "--format", "json", "--env", "staging"])
        expectRun(result, status: 0)
        let graph = try result.json()
        #expect(graph.keys == ["environment", "plugins"])
        #expect(graph["environment"]?.string == "staging")
        let plugins = try #require(graph["plugins"]?.elements)
        for p in plugins { #expect(p.keys == ["name", "state", "requires", "services"]) }
        #expect(plugins.map { $0["name"]?.string } == ["Mem", "Gone", "Off", "Stage"])
        #expect(plugins[3]["state"]?.string == "active")
        #expect(plugins[3]["requires"]?.strings == ["Mem"])
        #expect(plugins[3]["services"]?.strings == ["PlugboardAPI.ObjectStorage"])
        // The global --json gives the same document.
        expectRun(await sandbox.run(["graph", "--json", "--env", "staging"]), status: 0, stdout: .exactly(result.stdout))
    }

    /// A plugin whose requirement did not load fails, naming it.
    @Test func requirementNotActive_failsThePlugin() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Gone", "path": "nowhere/libGone.so"}"#,
            #"{"name": "Mem", "product": "MemoryStorage", "requires": ["Gone"]}"#,
        ]))
        let result = await sandbox.run(["check", "--json"])
        expectRun(result, status: 1)
        let mem = try #require(try result.json().elements?.last)
        #expect(mem["state"]?.string == "failed")
        #expect(mem["error"]?["message"]?.string == "plugin \"Mem\" requires plugin \"Gone\", which is rejected")
    }
}
