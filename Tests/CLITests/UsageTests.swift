import PlugboardHost
import PlugboardJSON
import Testing

/// Bad command lines: exit status 2, a message naming the bad word on standard error
/// (or the error object on standard output with `--json`), and nothing started.
@Suite struct UsageTests {
    @Test func unknownOption_suggestsTheClosestOne() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["--mainfest", "x.json", "check"]), status: 2, stdout: .empty,
                  stderr: .exactly("plugboard: error: unknown option \"--mainfest\"\nHINT: Did you mean \"--manifest\"?\n"))
        // After the subcommand, among its own and the global options.
        expectRun(await sandbox.runExactly(["storage", "put", "k", "--contnet-type", "text/plain"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown option \"--contnet-type\"", "Did you mean \"--content-type\"?"))
        expectRun(await sandbox.runExactly(["graph", "--fromat", "json"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown option \"--fromat\"", "Did you mean \"--format\"?"))
    }

    @Test func unknownOption_withNothingClose_pointsAtHelp() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["check", "--xyzzy-frobnicate"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown option \"--xyzzy-frobnicate\"", "plugboard check --help"))
        expectRun(await sandbox.runExactly(["check", "-q"]), status: 2, stdout: .empty, stderr: .contains("unknown option \"-q\""))
    }

    @Test func globalOptionOfACommandThatIgnoresIt_isRefused() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // Before or after the subcommand, as global options are accepted anywhere.
        expectRun(await sandbox.runExactly(["inspect", "lib.so", "--manifest", "p.json"]), status: 2, stdout: .empty, stderr: .exactly("""
            plugboard: error: option "--manifest" does not apply to "inspect"
            DETAIL: plugboard inspect takes only the global options --json, --log-level, --log-format, --cache-dir, --version; leave out --manifest.
            HINT: Run "plugboard inspect --help" for usage.

            """))
        expectRun(await sandbox.runExactly(["--env", "production", "reload"]), status: 2, stdout: .empty,
                  stderr: .contains("option \"--env\" does not apply to \"reload\"", "Run \"plugboard reload --help\" for usage."))
        expectRun(await sandbox.runExactly(["new-plugin", "Acme", "--cache-dir", "c"]), status: 2, stdout: .empty,
                  stderr: .contains("option \"--cache-dir\" does not apply to \"new-plugin\"", "plugboard new-plugin --help"))
        expectRun(await sandbox.runExactly(["completion", "bash", "--json"]), status: 2,
                  stdout: .contains("cli.usage", "does not apply to \\\"completion\\\"", "takes no global options"))
        expectRun(await sandbox.runExactly(["version", "--manifest", "p.json"]), status: 2, stdout: .empty,
                  stderr: .contains("option \"--manifest\" does not apply to \"version\""))
        expectRun(await sandbox.runExactly(["publish", "libX.so", "ftp://plugins/"]), status: 2, stdout: .empty,
                  stderr: .contains("invalid destination \"ftp://plugins/\"", "s3://bucket/prefix/"))
        expectRun(await sandbox.runExactly(["publish", "libX.so"]), status: 2, stdout: .empty, stderr: .contains("DESTINATION"))
        // A command that reads the manifest takes it wherever it is written.
        expectRun(await sandbox.runExactly(["storage", "list", "--manifest", "missing.json"]), status: 2,
                  stderr: .contains("missing.json"))
    }

    @Test func unknownSubcommand_suggestsTheClosestOne() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["plugns"]), status: 2, stdout: .empty, stderr: .exactly("""
            plugboard: error: unknown command "plugns"
            DETAIL: Expected one of: check, plugins, services, inspect, keygen, sign, graph, storage, serve, fleet, reload, publish, preflight, worker, new-plugin, new-contract, completion, version.
            HINT: Did you mean "plugins"?

            """))
        expectRun(await sandbox.runExactly(["storage", "lst"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown command \"lst\" for \"storage\"", "Did you mean \"list\"?"))
    }

    @Test func missingCommand_andMissingSubcommand() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly([]), status: 2, stdout: .empty,
                  stderr: .contains("missing command", "check, plugins, services, inspect, keygen, sign, graph, storage"))
        expectRun(await sandbox.runExactly(["storage"]), status: 2, stdout: .empty,
                  stderr: .contains("missing subcommand for \"storage\"", "put, get, head, delete, list"))
    }

    @Test func missingArgument_namesIt() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["storage", "get"]), status: 2, stdout: .empty, stderr: .exactly("""
            plugboard: error: missing argument KEY for "storage get"
            DETAIL: The object's key.
            HINT: Run "plugboard storage get --help" for usage.

            """))
        expectRun(await sandbox.runExactly(["inspect"]), status: 2, stdout: .empty,
                  stderr: .contains("missing argument FILE for \"inspect\""))
    }

    @Test func otherUsageErrors() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["check", "extra"]), status: 2, stdout: .empty,
                  stderr: .contains("unexpected argument \"extra\" for \"check\""))
        expectRun(await sandbox.runExactly(["check", "--manifest"]), status: 2, stdout: .empty,
                  stderr: .contains("missing value for option \"--manifest\"", "Expected PATH after it."))
        expectRun(await sandbox.runExactly(["check", "--json=yes"]), status: 2, stdout: .empty,
                  stderr: .contains("option \"--json\" takes no value"))
        expectRun(await sandbox.runExactly(["check", "--manifest", "a.json", "--manifest", "b.json"]), status: 2,
                  stdout: .empty, stderr: .contains("option \"--manifest\" given more than once"))
        // Values the parser accepts but validation refuses, before anything is loaded.
        expectRun(await sandbox.runExactly(["check", "--env", "prod"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown environment \"prod\"", "Did you mean \"production\"?"))
        expectRun(await sandbox.runExactly(["check", "--log-level", "warn"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown log level \"warn\"", "Did you mean \"warning\"?"))
        expectRun(await sandbox.runExactly(["graph", "--format", "svg"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown graph format \"svg\""))
        expectRun(await sandbox.runExactly(["storage", "put", "k", "--meta", "novalue"]), status: 2, stdout: .empty,
                  stderr: .contains("invalid --meta \"novalue\"", "Expected KEY=VALUE."))
    }

    /// Every usage error ends with the one hint form, naming the help of the command the
    /// words reached, unless it has a better hint (a suggestion).
    @Test func everyUsageError_pointsAtItsCommandsHelp() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let cases: [([String], String)] = [
            (["check", "--json=yes"], "plugboard check --help"),
            (["check", "--manifest"], "plugboard check --help"),
            (["check", "extra"], "plugboard check --help"),
            (["storage"], "plugboard storage --help"),
            (["storage", "put", "k", "-z"], "plugboard storage put --help"),
            (["xyzzyfrob"], "plugboard --help"),
            (["check", "--env", "a", "--env", "b"], "plugboard check --help"),
        ]
        for (arguments, help) in cases {
            let result = await sandbox.runExactly(arguments)
            expectRun(result, status: 2, stdout: .empty, stderr: .contains("HINT: Run \"\(help)\" for usage.\n"))
            #expect(!result.stderr.contains("Run with --help"), "\(arguments): \(result.stderr)")
        }
    }

    @Test func version_isTheVersionOption() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let option = await sandbox.runExactly(["--version"])
        expectRun(option, status: 0, stderr: .empty)
        #expect(option.stdout.hasPrefix("plugboard "))
        expectRun(await sandbox.runExactly(["version"]), status: 0, stdout: .exactly(option.stdout), stderr: .empty)
        let json = await sandbox.runExactly(["version", "--json"])
        expectRun(json, status: 0, stdout: .exactly(await sandbox.runExactly(["--version", "--json"]).stdout), stderr: .empty)
    }

    /// `--json` turns a usage error into the error object on standard output, with the
    /// same exit status, wherever `--json` stands.
    @Test(arguments: [
        ["--json", "plugns"],
        ["plugns", "--json"],
        ["--json", "--mainfest", "x", "check"],
        ["storage", "get", "--json"],
        ["check", "--env", "prod", "--json"],
    ])
    func usageError_asJSON(arguments: [String]) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.runExactly(arguments)
        expectRun(result, status: 2, stderr: .empty)
        let json = try result.json()
        #expect(json.keys == ["error"])
        let error = try #require(json["error"])
        #expect(error.keys == ["code", "message", "detail", "hint"])
        #expect(error["code"]?.string == "cli.usage")
        #expect(error["message"]?.string?.isEmpty == false)
        #expect(error["detail"]?.string != nil || error["detail"]?.isNull == true)
        #expect(error["hint"]?.string != nil || error["hint"]?.isNull == true)
    }

    @Test func usageErrorJSON_hasNullDetail_andTheSuggestionAsHint() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.runExactly(["--mainfest", "x", "check", "--json"])
        expectRun(result, status: 2, stdout: .exactly("""
            {
              "error": {
                "code": "cli.usage",
                "message": "unknown option \\"--mainfest\\"",
                "detail": null,
                "hint": "Did you mean \\"--manifest\\"?"
              }
            }

            """), stderr: .empty)
    }

    /// Global options work before and after the subcommand, in `--name value` and
    /// `--name=value` forms, and `--` ends the options.
    @Test func globalOptions_beforeAndAfterTheSubcommand() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.makeFolder("conf")
        try sandbox.write("conf/m.json", ManifestText.make([ManifestText.memory]))
        let cache = sandbox.cacheDirectory
        let forms: [[String]] = [
            ["--manifest", "conf/m.json", "--json", "--cache-dir", cache, "plugins"],
            ["plugins", "--manifest", "conf/m.json", "--json", "--cache-dir", cache],
            ["--json", "plugins", "--manifest=conf/m.json", "--cache-dir=\(cache)"],
            ["--log-level", "error", "plugins", "--env", "development", "--manifest", "conf/m.json", "--json",
             "--cache-dir", cache],
        ]
        var outputs: [String] = []
        for args in forms {
            let result = await sandbox.runExactly(args)
            expectRun(result, status: 0, stdout: .contains("\"name\": \"Mem\"", "\"state\": \"active\""))
            outputs.append(result.stdout)
        }
        #expect(Set(outputs).count == 1, "the same options in other places give other output")

        // Storage: options between the subcommands and after the arguments.
        expectRun(await sandbox.runExactly(["storage", "--manifest", "conf/m.json", "list", "--cache-dir", cache, "--json"]),
                  status: 0, stdout: .exactly("[]\n"))
        // `--` ends the options: a key that looks like an option.
        let put = await sandbox.runExactly(["--manifest", "conf/m.json", "--cache-dir", cache, "--json",
                                      "storage", "put", "--", "--weird-key"], stdin: Array("x".utf8))
        expectRun(put, status: 0, stdout: .contains("\"key\": \"--weird-key\""))
    }
}
