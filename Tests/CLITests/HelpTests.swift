import PlugboardHost
import PlugboardJSON
import Testing

/// Help screens and `--version`: printed on standard output, exit status 0.
@Suite struct HelpTests {
    /// The root help screen, word for word (swift-argument-parser keeps such snapshots).
    /// Change it together with CLISpec and docs/CLI.md.
    static let rootHelp = """
        OVERVIEW: Load plugins from a manifest into one dependency-injection container,
        and use them.

        Global options may be given before or after the subcommand.

        Exit status: 0 on success; 1 when the operation failed (a required plugin failed
        or was rejected, check found a plugin that did not load, no ObjectStorage is
        bound, a storage operation failed); 2 for bad usage, a missing or invalid
        manifest, or a missing ${VAR} in a selected plugin's config.

        USAGE: plugboard <subcommand> [<options>]

        OPTIONS:
          --manifest PATH         The manifest to read. (default: $PLUGBOARD_MANIFEST,
                                  else ./plugins.json)
          --env NAME              The environment: testing, development, staging or
                                  production. (default: $PLUGBOARD_ENV, else the
                                  manifest's environment, else development)
          --json                  Print results, and errors, as JSON on standard output.
          --log-level LEVEL       Log lines at or above LEVEL to standard error: trace,
                                  debug, info, notice, warning, error or critical.
                                  (default: warning)
          --log-format FORMAT     How log lines are written: text (time, level, label,
                                  message, key=value) or json (one object per line with
                                  time, level, label, message and metadata). (default:
                                  $PLUGBOARD_LOG_FORMAT, else text)
          --cache-dir PATH        Where content-addressed plugin copies are kept.
                                  (default: $XDG_CACHE_HOME/plugboard, else
                                  ~/.cache/plugboard)
          --version               Print the version and exit.
          -h, --help              Show help information.

        SUBCOMMANDS:
          check                   Validate the manifest and load every selected plugin;
                                  report each one.
          plugins                 List the manifest's plugins and their states.
          services                List every service registration after loading the
                                  plugins.
          inspect                 Show what a plugin file declares.
          keygen                  Make an Ed25519 key pair for signing plugins.
          sign                    Sign a plugin file for its manifest entry.
          graph                   Show plugins, their services and who requires whom.
          storage                 Use the ObjectStorage the manifest binds (the
                                  highest-ranked one).
          serve                   Serve the bound ObjectStorage over HTTP until SIGTERM
                                  or SIGINT.
          fleet                   Run a fleet of hosts that serve from etcd: status, the
                                  stable manifest, rollouts in waves.
          reload                  Ask a running plugboard serve to reload its manifest,
                                  and print the outcome.
          publish                 Put a built plugin in an S3 store by its digest, and
                                  print the manifest entry that loads it.
          preflight               Internal: the child process in which the host tries
                                  plugins before it maps them.
          worker                  Internal: the child process in which an isolated
                                  plugin runs.
          new-plugin              Write a SwiftPM package for a new plugin, ready to
                                  build and test.
          new-contract            Write a contract package for a service protocol of
                                  your own, with a provider and a consumer.
          completion              Print a completion script for bash, zsh or fish.
          version                 Print the versions of plugboard, its PlugboardAPI and
                                  the plugin ABI (as --version does).

          See 'plugboard help <subcommand>' for detailed help.

        """

    @Test func rootHelp_matchesTheSnapshot() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["--help"]), status: 0, stdout: .exactly(Self.rootHelp), stderr: .empty)
        expectRun(await sandbox.runExactly(["-h"]), status: 0, stdout: .exactly(Self.rootHelp), stderr: .empty)
        expectRun(await sandbox.runExactly(["help"]), status: 0, stdout: .exactly(Self.rootHelp), stderr: .empty)
    }

    @Test func rootHelp_fitsEightyColumns() throws {
        for line in Self.rootHelp.split(separator: "\n") {
            #expect(line.count <= 80, "too long: \(line)")
        }
    }

    /// Every command has its own help, reachable three ways, naming its own options and
    /// the global ones.
    @Test(arguments: [
        (["check"], "OVERVIEW: Validate the manifest", [String]()),
        (["plugins"], "OVERVIEW: List the manifest's plugins", []),
        (["services"], "OVERVIEW: List every service registration", []),
        (["inspect"], "OVERVIEW: Show what a plugin file declares.", ["--no-load", "FILE"]),
        (["graph"], "OVERVIEW: Show plugins, their services", ["--format FORMAT", "(default:\n                          dot)"]),
        (["storage"], "OVERVIEW: Use the ObjectStorage", ["SUBCOMMANDS:", "put", "get", "head", "delete", "list"]),
        (["storage", "put"], "OVERVIEW: Store an object.", ["--content-type TYPE", "--meta KEY=VALUE", "KEY", "[FILE]"]),
        (["storage", "get"], "OVERVIEW: Write an object's content", ["-o, --output FILE", "KEY"]),
        (["storage", "head"], "OVERVIEW: Show an object's size", ["meta-<key>: <value>"]),
        (["storage", "delete"], "OVERVIEW: Delete an object; deleting a missing key succeeds.", ["KEY"]),
        (["storage", "list"], "OVERVIEW: List keys, one per line.", ["[PREFIX]"]),
        (["serve"], "OVERVIEW: Serve the bound ObjectStorage over HTTP", ["--listen HOST:PORT", "--shutdown-timeout SECONDS",
                                                                           "--max-body-bytes BYTES", "--max-connections N"]),
    ])
    func subcommandHelp(path: [String], overview: String, mentions: [String]) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let usage = "USAGE: plugboard \(path.joined(separator: " "))"
        let globals = ["GLOBAL OPTIONS:", "--manifest PATH", "--env NAME", "--json", "--log-level LEVEL",
                       "--log-format FORMAT", "--cache-dir PATH", "--version", "-h, --help"]
        let first = await sandbox.runExactly(path + ["--help"])
        // A command that reads no manifest offers no --manifest and --env.
        let readsNoManifest = path == ["inspect"]
        let offered = readsNoManifest ? globals.filter { $0 != "--manifest PATH" && $0 != "--env NAME" } : globals
        expectRun(first, status: 0, stdout: .contains([overview, usage] + offered + mentions), stderr: .empty)
        if readsNoManifest {
            #expect(!first.stdout.contains("--manifest"), "\(first.stdout)")
            #expect(!first.stdout.contains("--env"), "\(first.stdout)")
        }
        #expect(first.stdout.hasPrefix(overview))
        // `help PATH` and `-h` print the same screen.
        expectRun(await sandbox.runExactly(["help"] + path), status: 0, stdout: .exactly(first.stdout), stderr: .empty)
        expectRun(await sandbox.runExactly(path + ["-h"]), status: 0, stdout: .exactly(first.stdout), stderr: .empty)
        // Help wins over missing arguments, and over options that need a manifest.
        expectRun(await sandbox.runExactly(["--manifest", "missing.json"] + path + ["--help"]), status: 0,
                  stdout: .exactly(first.stdout), stderr: .empty)
        for line in first.stdout.split(separator: "\n") { #expect(line.count <= 80, "too long: \(line)") }
    }

    @Test func helpStoragePut_isTheSubcommandsHelp() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.runExactly(["help", "storage", "put"])
        expectRun(result, status: 0, stdout: .contains("OVERVIEW: Store an object.",
                                                       "USAGE: plugboard storage put [<options>] KEY [FILE]",
                                                       "ARGUMENTS:", "OPTIONS:", "GLOBAL OPTIONS:"),
                  stderr: .empty)
        // The form the storage help screen advertises works too.
        expectRun(await sandbox.runExactly(["storage", "help", "put"]), status: 0, stdout: .exactly(result.stdout))
        expectRun(await sandbox.runExactly(["storage", "put", "--help"]), status: 0, stdout: .exactly(result.stdout))
    }

    @Test func help_ofAnUnknownCommand_isAUsageError() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["help", "plugns"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown command \"plugns\"", "Did you mean \"plugins\"?"))
    }

    @Test func version_printsVersionsAndExitsZero() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.runExactly(["--version"])
        expectRun(result, status: 0, stdout: .contains("plugboard 0.1.0 (PlugboardAPI ", ", plugin ABI "), stderr: .empty)
        #expect(result.stdout.hasSuffix(")\n") && result.stdout.split(separator: "\n").count == 1)
        // Anywhere on the line, and without a manifest.
        expectRun(await sandbox.runExactly(["storage", "get", "--version"]), status: 0, stdout: .exactly(result.stdout))
        // An unknown option is still an error.
        expectRun(await sandbox.runExactly(["--version", "--bogus"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown option \"--bogus\""))
    }

    @Test func version_asJSON() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.runExactly(["--version", "--json"])
        expectRun(result, status: 0, stderr: .empty)
        let json = try result.json()
        #expect(json.keys == ["plugboard", "api", "abi"])
        #expect(json["plugboard"]?.string == "0.1.0")
        #expect(json["abi"]?.integer != nil)
    }
}
