#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `plugboard completion bash|zsh|fish`: each script passes its shell's syntax check,
/// and bash's (and fish's) completion, run for real in a child shell, offers what the
/// parser accepts and the help lists.
@Suite struct CompletionTests {
    /// The shell's absolute path, if it is installed (.ci/run installs zsh and fish).
    static func shell(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/bin/\(name)", "/usr/local/bin/\(name)"].first { access($0, X_OK) == 0 }
    }

    /// The script for `shell`, written into `sandbox` as `completion.<shell>`.
    static func script(_ shell: String, in sandbox: Sandbox) async throws -> String {
        let result = await sandbox.runExactly(["completion", shell])
        expectRun(result, status: 0, stdout: .contains("plugboard"))
        return try sandbox.write("completion.\(shell)", result.stdout)
    }

    /// Each shell's syntax check is its own test, so a shell that is missing skips only
    /// its own check, saying why, and the README's `swift test` passes without it.
    static func syntaxCheck(_ name: String) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let path = try await Self.script(name, in: sandbox)
        let shell = try #require(Self.shell(name))
        let check = await CommandRunner.spawn(shell, ["-n", path], in: sandbox.root, environment: [:])
        #expect(check.status == 0 && check.stderr.isEmpty, "\(name) -n: \(check.stderr)")
    }

    @Test(.enabled(if: CompletionTests.shell("bash") != nil, "bash is not installed; .ci/run installs it"))
    func bash_scriptPassesTheShellsSyntaxCheck() async throws { try await Self.syntaxCheck("bash") }

    @Test(.enabled(if: CompletionTests.shell("zsh") != nil, "zsh is not installed; .ci/run installs it (apt-get install zsh)"))
    func zsh_scriptPassesTheShellsSyntaxCheck() async throws { try await Self.syntaxCheck("zsh") }

    @Test(.enabled(if: CompletionTests.shell("fish") != nil, "fish is not installed; .ci/run installs it (apt-get install fish)"))
    func fish_scriptPassesTheShellsSyntaxCheck() async throws { try await Self.syntaxCheck("fish") }

    @Test func unknownShell_isAUsageError() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.runExactly(["completion", "bsh"]), status: 2,
                  stderr: .contains("unknown shell \"bsh\"", "Expected one of: bash, zsh, fish.", "Did you mean \"bash\"?"))
    }

    /// What bash's completion function offers for `words`, the last being the word under
    /// the cursor, run in `sandbox` (file names complete from there).
    static func bash(_ words: [String], script: String, in sandbox: Sandbox) async throws -> Set<String> {
        let shell = try #require(Self.shell("bash"))
        let driver = #"source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _plugboard; printf '%s\n' "${COMPREPLY[@]}""#
        let run = await CommandRunner.spawn(shell, ["-c", driver, "bash", script] + words, in: sandbox.root, environment: [:])
        #expect(run.status == 0 && run.stderr.isEmpty, "bash: \(run.stderr)")
        return Set(run.stdout.split(separator: "\n").map(String.init))
    }

    @Test func bash_completesCommandsOptionsValuesAndFiles() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try await Self.script("bash", in: sandbox)
        _ = try sandbox.write("plugins.json", "{}")
        func offered(_ words: String...) async throws -> Set<String> { try await Self.bash(["plugboard"] + words, script: script, in: sandbox) }

        #expect(try await offered("se") == ["serve", "services"])
        #expect(try await offered("serv") == ["serve", "services"])
        #expect(try await offered("serve", "--wa") == ["--watch"])
        #expect(try await offered("storage", "") == ["put", "get", "head", "delete", "list"])
        #expect(try await offered("completion", "") == ["bash", "zsh", "fish"])
        #expect(try await offered("--log-format", "") == ["text", "json"])
        // bash splits --log-format=j at the "=" (COMP_WORDBREAKS).
        #expect(try await offered("--log-format", "=", "j") == ["json"])
        #expect(try await offered("serve", "--log-level", "e") == ["error"])
        #expect(try await offered("serve", "--handler-start", "") == ["at-once", "immediate", "pool"])
        #expect(try await offered("graph", "--format", "") == ["dot", "json"])
        #expect(try await offered("--env", "pro") == ["production"])
        // A value is skipped: "json" after --log-format is not taken for a command.
        #expect(try await offered("--log-format", "json", "st") == ["storage"])
        #expect(try await offered("storage", "get", "-o", "plug") == ["plugins.json"])
        #expect(try await offered("--manifest", "plug") == ["plugins.json"])
        #expect(try await offered("inspect", "plug") == ["plugins.json"])
        #expect(try await offered("storage", "put", "key", "plug") == ["plugins.json"])
        // A command that reads no manifest is not offered --manifest (the parser refuses it).
        #expect(try await offered("inspect", "--m").isEmpty)
        #expect(try await offered("reload", "--e").isEmpty)
        #expect(try await offered("storage", "put", "--m") == ["--meta", "--manifest"])
        // After the first argument, no more subcommands.
        #expect(try await offered("storage", "list", "pre", "").isEmpty)
    }

    /// The words a help screen lists in one of its sections (`SUBCOMMANDS:`, `OPTIONS:`):
    /// the first word of each row, options by their long name.
    static func listed(_ help: String, section: String) -> Set<String> {
        var names: Set<String> = []
        var inside = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasSuffix(":") && !line.hasPrefix(" ") { inside = line == section; continue }
            guard inside, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            let words = line.split(separator: " ").map(String.init)
            if let long = words.first(where: { $0.hasPrefix("--") }) {
                names.insert(long)
            } else if let first = words.first, first != "See" { names.insert(first) }
        }
        return names
    }

    @Test func bash_offersWhatTheHelpLists() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try await Self.script("bash", in: sandbox)
        let help = await sandbox.runExactly(["--help"]).stdout
        #expect(try await Self.bash(["plugboard", ""], script: script, in: sandbox) == Self.listed(help, section: "SUBCOMMANDS:"))
        for command in [["serve"], ["inspect"], ["reload"], ["storage", "put"], ["new-plugin"], ["completion"]] {
            let screen = await sandbox.runExactly(command + ["--help"]).stdout
            let listed = Self.listed(screen, section: "OPTIONS:").union(Self.listed(screen, section: "GLOBAL OPTIONS:"))
            let offered = try await Self.bash(["plugboard"] + command + ["--"], script: script, in: sandbox)
            #expect(offered == listed, "\(command)")
        }
    }

    /// zsh's completion system runs only in an interactive widget, so its builtins are
    /// stood in for by functions that print what they are given (`compadd` filtering by
    /// `PREFIX` as it does); the script's own logic runs in a real zsh.
    static let zshDriver = #"""
        compdef() { :; }
        compadd() { [ "$1" = -- ] && shift; local w; for w in "$@"; do [[ $w == ${PREFIX}* ]] && print -r -- $w; done; }
        _files() { print -r -- "files $*"; }
        _message() { :; }
        compset() { [ "$1" = -P ] && PREFIX=${PREFIX#*=}; }
        source "$1"; shift
        words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
        _plugboard
        """#

    @Test(.enabled(if: CompletionTests.shell("zsh") != nil, "zsh is not installed; .ci/run installs it"))
    func zsh_completesCommandsOptionsValuesAndFiles() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try await Self.script("zsh", in: sandbox)
        let driver = try sandbox.write("driver.zsh", Self.zshDriver)
        let zsh = try #require(Self.shell("zsh"))
        func offered(_ words: String...) async -> Set<String> {
            let run = await CommandRunner.spawn(zsh, ["-f", driver, script, "plugboard"] + words, in: sandbox.root, environment: [:])
            // The status is compadd's "were matches added", not a failure.
            #expect(!run.timedOut && run.stderr.isEmpty, "zsh: \(run.stderr)")
            return Set(run.stdout.split(separator: "\n").map(String.init))
        }
        #expect(await offered("se") == ["serve", "services"])
        #expect(await offered("serve", "--wa") == ["--watch"])
        #expect(await offered("--log-format=j") == ["json"])
        #expect(await offered("--log-format", "json", "st") == ["storage"])
        #expect(await offered("completion", "") == ["bash", "zsh", "fish"])
        #expect(await offered("--manifest", "pl") == ["files "])
        #expect(await offered("new-plugin", "--dir", "x") == ["files -/"])
        #expect(await offered("inspect", "--m").isEmpty)
    }

    @Test(.enabled(if: CompletionTests.shell("fish") != nil, "fish is not installed; .ci/run installs it"))
    func fish_completesCommandsOptionsAndValues() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let script = try await Self.script("fish", in: sandbox)
        let fish = try #require(Self.shell("fish"))
        func offered(_ line: String) async -> Set<String> {
            // fish prints "candidate<TAB>description" per line.
            let run = await CommandRunner.spawn(fish, ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", script, line],
                                          in: sandbox.root, environment: ["HOME": sandbox.home])
            #expect(run.status == 0, "fish: \(run.stderr)")
            return Set(run.stdout.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") })
        }
        #expect(await offered("plugboard se") == ["serve", "services"])
        #expect(await offered("plugboard serve --wa") == ["--watch"])
        #expect(await offered("plugboard --log-format ") == ["text", "json"])
        #expect(await offered("plugboard completion ") == ["bash", "zsh", "fish"])
        #expect(await offered("plugboard storage ") == ["put", "get", "head", "delete", "list"])
        #expect(await offered("plugboard inspect --man").isEmpty)
    }
}
