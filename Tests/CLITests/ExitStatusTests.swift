import PlugboardHost
import PlugboardJSON
import Testing

/// One test per class of outcome in docs/CLI.md: 0 success, 1 the operation failed, 2 bad
/// usage or a manifest-level error. Each is checked in text and in `--json`, which must
/// give the same status and the error object on standard output.
@Suite struct ExitStatusTests {
    /// Runs `arguments` twice, as text and with `--json`, and checks both.
    @discardableResult
    func expectFailure(_ sandbox: Sandbox, _ arguments: [String], status: Int32, code: String,
                       messageContains: [String] = [], stdin: [UInt8] = [], environment: [String: String] = [:],
                       sourceLocation: Testing.SourceLocation = #_sourceLocation) async throws -> CommandResult {
        let text = await sandbox.run(arguments, stdin: stdin, environment: environment)
        expectRun(text, status: status, stdout: .empty,
                  stderr: .contains(["plugboard: error: "] + messageContains), sourceLocation: sourceLocation)
        let json = await sandbox.run(arguments + ["--json"], stdin: stdin, environment: environment)
        expectRun(json, status: status, sourceLocation: sourceLocation)
        let object = try json.json()
        #expect(object.keys == ["error"], sourceLocation: sourceLocation)
        let error = try #require(object["error"], sourceLocation: sourceLocation)
        #expect(error.keys == ["code", "message", "detail", "hint"], sourceLocation: sourceLocation)
        #expect(error["code"]?.string == code, "\(json)", sourceLocation: sourceLocation)
        for piece in messageContains {
            #expect(error["message"]?.string?.contains(piece) == true, "\(json)", sourceLocation: sourceLocation)
        }
        return json
    }

    // MARK: - 2: the manifest

    @Test func missingManifest_exits2() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // The default, ./plugins.json, does not exist in the sandbox.
        try await expectFailure(sandbox, ["check"], status: 2, code: "manifest.not_found", messageContains: ["plugins.json"])
        try await expectFailure(sandbox, ["storage", "list", "--manifest", "nope.json"], status: 2,
                          code: "manifest.not_found", messageContains: ["nope.json"])
    }

    @Test func invalidManifest_exits2_withFileLineAndColumn() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", """
            {
              "schemaVersion": 1,
              "plugins": [
                {"name": "Mem", "product": "MemoryStorage",}
              ]
            }
            """)
        let json = try await expectFailure(sandbox, ["plugins"], status: 2, code: "manifest.syntax",
                                     messageContains: ["plugins.json:4:48: "])
        #expect(json.stdout.contains("found '}'"))

        try sandbox.write("typo.json", """
            {
              "schemaVersion": 1,
              "plugins": [
                {"name": "Mem", "product": "MemoryStorage", "enviroments": ["testing"]}
              ]
            }
            """)
        let typo = try await expectFailure(sandbox, ["check", "--manifest", "typo.json"], status: 2,
                                     code: "manifest.unknown_key", messageContains: ["typo.json:4:49: "])
        #expect(try typo.json()["error"]?["hint"]?.string == "Did you mean \"environments\"?")
    }

    @Test func missingVariable_exits2() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Mem", "product": "MemoryStorage", "config": {"seed": "${PLUGBOARD_TEST_SEED}"}}"#,
        ]))
        let json = try await expectFailure(sandbox, ["check"], status: 2, code: "manifest.missing_variable",
                                     messageContains: ["plugins.json:4:", "PLUGBOARD_TEST_SEED", "\"Mem\""])
        #expect(try json.json()["error"]?["hint"]?.string?.contains("${PLUGBOARD_TEST_SEED:-default}") == true)
        // Set, it expands; "7" is not an integer, so the plugin itself refuses its
        // config: a plugin failure, status 1 for check.
        expectRun(await sandbox.run(["check"], environment: ["PLUGBOARD_TEST_SEED": "7"]), status: 1,
                  stdout: .contains("plugin.config_invalid"))
    }

    // MARK: - 1: plugins

    @Test func requiredPluginMissing_exits1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            ManifestText.memory,
            #"{"name": "Gone", "path": "plugins/libGone.so", "required": true}"#,
        ]))
        for command in [["services"], ["graph"], ["storage", "list"]] {
            let text = await sandbox.run(command)
            expectRun(text, status: 1, stderr: .contains("plugboard: error: required plugin \"Gone\" is rejected",
                                                         "DETAIL: loader.file_not_found: "))
        }
        // plugins prints the plugin's error in its list, and its exit reason points there.
        expectRun(await sandbox.run(["plugins"]), status: 1, stdout: .contains("DETAIL: The file does not exist."),
                  stderr: .contains("plugboard: error: required plugin \"Gone\" is rejected", "HINT: Its error is shown above."))
        // services, graph and storage fail with the error alone.
        for command in [["services"], ["graph"], ["storage", "list"]] {
            try await expectFailure(sandbox, command, status: 1, code: "host.required_plugin_failed",
                              messageContains: ["required plugin \"Gone\""])
        }
        // plugins still lists every plugin: one JSON document, the error inside.
        let plugins = await sandbox.run(["plugins", "--json"])
        expectRun(plugins, status: 1)
        let list = try #require(try plugins.json().elements)
        #expect(list.map { $0["name"]?.string } == ["Mem", "Gone"])
        #expect(list[1]["state"]?.string == "rejected")
        #expect(list[1]["error"]?["code"]?.string == "loader.file_not_found")
    }

    @Test func optionalPluginMissing_isFineExceptForCheck() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            ManifestText.memory,
            #"{"name": "Gone", "path": "plugins/libGone.so"}"#,
        ]))
        expectRun(await sandbox.run(["plugins"]), status: 0, stdout: .contains("Gone", "rejected", "loader.file_not_found"))
        expectRun(await sandbox.run(["storage", "list"]), status: 0)
        let check = await sandbox.run(["check"])
        expectRun(check, status: 1, stdout: .contains("Gone", "rejected"),
                  stderr: .contains("check failed: 1 of the selected plugins did not load"))
        let json = await sandbox.run(["check", "--json"])
        expectRun(json, status: 1)
        #expect(try json.json().elements?.count == 2)
    }

    @Test func check_withAFailedPlugin_exits1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // MemoryStorage refuses a config key it does not know: the plugin fails, not the
        // manifest.
        try sandbox.write("plugins.json", ManifestText.make([
            ManifestText.memory,
            #"{"name": "Bad", "product": "MemoryStorage", "config": {"latencyMs": 5}}"#,
        ]))
        let check = await sandbox.run(["check"])
        expectRun(check, status: 1, stdout: .contains("Bad", "failed", "plugin.config_invalid", "config.latencyMs",
                                                      "DETAIL: Known keys: "),
                  stderr: .contains("check failed"))
        let json = await sandbox.run(["check", "--json"])
        expectRun(json, status: 1)
        let bad = try #require(try json.json().elements?.last)
        #expect(bad["state"]?.string == "failed")
        #expect(bad["error"]?["code"]?.string == "plugin.config_invalid")
        // Not required: plugins and storage carry on with the good one.
        expectRun(await sandbox.run(["plugins"]), status: 0)
        expectRun(await sandbox.run(["storage", "list"]), status: 0)
    }

    // MARK: - 1: storage

    @Test func noObjectStorageBound_exits1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Mem", "product": "MemoryStorage", "environments": ["production"]}"#,
        ]))
        let json = try await expectFailure(sandbox, ["storage", "list"], status: 1, code: "host.no_storage",
                                     messageContains: ["no ObjectStorage is bound in the development environment"])
        #expect(try json.json()["error"]?["detail"]?.string == "Plugins: Mem is skipped.")
        try sandbox.write("empty.json", ManifestText.make([]))
        try await expectFailure(sandbox, ["storage", "get", "k", "--manifest", "empty.json"], status: 1, code: "host.no_storage")
        // In production it is bound.
        expectRun(await sandbox.run(["storage", "list", "--env", "production"]), status: 0, stdout: .empty)
    }

    @Test func getOrHeadOfAMissingKey_exits1_deleteSucceeds() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        try await expectFailure(sandbox, ["storage", "get", "nothing/here"], status: 1, code: "storage.not_found",
                          messageContains: ["no object under key \"nothing/here\""])
        try await expectFailure(sandbox, ["storage", "head", "nothing/here"], status: 1, code: "storage.not_found")
        try await expectFailure(sandbox, ["storage", "get", "nothing/here", "-o", "out.bin"], status: 1,
                          code: "storage.not_found")
        #expect(!sandbox.exists("out.bin"), "a failed get must not leave a file")
        expectRun(await sandbox.run(["storage", "delete", "nothing/here"]), status: 0, stdout: .empty,
                  stderr: .exactly("nothing stored under \"nothing/here\"; nothing deleted\n"))
        expectRun(await sandbox.run(["storage", "delete", "nothing/here", "--json"]), status: 0,
                  stdout: .exactly("{\n  \"deleted\": \"nothing/here\",\n  \"existed\": false\n}\n"), stderr: .empty)
    }

    @Test func invalidKeyOrMetadata_exits1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        try await expectFailure(sandbox, ["storage", "put", ""], status: 1, code: "storage.invalid_key",
                          messageContains: ["object key is empty"], stdin: Array("x".utf8))
        try await expectFailure(sandbox, ["storage", "get", String(repeating: "k", count: 1025)], status: 1,
                          code: "storage.invalid_key")
        try await expectFailure(sandbox, ["storage", "put", "k", "--meta", "Author=ada"], status: 1,
                          code: "storage.invalid_metadata", messageContains: ["\"Author\""], stdin: Array("x".utf8))
        try await expectFailure(sandbox, ["storage", "put", "k", "--content-type", "text/plain\u{7}"], status: 1,
                          code: "storage.invalid_argument", stdin: Array("x".utf8))
    }

    @Test func otherStorageErrors_exit1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // MemoryStorage's fault injection: every list fails as "unavailable".
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Mem", "product": "MemoryStorage", "config": {"failOperations": ["list"]}}"#,
        ]))
        try await expectFailure(sandbox, ["storage", "list"], status: 1, code: "storage.unavailable")
        // A local file that cannot be read.
        try await expectFailure(sandbox, ["storage", "put", "k", "no-such-file.txt"], status: 1, code: "cli.local_file",
                          messageContains: ["could not open file \"no-such-file.txt\""])
    }

    @Test func inspectOfAMissingFile_exits1() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        for arguments in [["inspect", "--no-load", "libNothing.so"], ["inspect", "libNothing.so"]] {
            let result = try await expectFailure(sandbox, arguments, status: 1, code: "loader.file_not_found",
                                           messageContains: ["no file \"libNothing.so\" to inspect"])
            // The file came from the command line: nothing points at a manifest.
            #expect(!result.stdout.contains("plugins.json"), "\(result.stdout)")
            #expect(result.stdout.contains(".so file"), "\(result.stdout)")
        }
    }
}
