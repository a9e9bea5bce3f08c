#if canImport(Glibc)
import Glibc
#endif
import PlugboardHost
import Testing

/// docs/CLI.md keeps up with the help screens: it holds the root help word for word and
/// names every command and option the help screens list.
@Suite struct DocumentationTests {
    static func cliDocument() throws -> String { try document("docs/CLI.md") }

    /// A file of the checkout, found above the build products.
    static func document(_ relative: String) throws -> String {
        var folder = CommandRunner.productsFolder
        while folder != "/" && access("\(folder)/Package.swift", F_OK) != 0 { folder = CommandRunner.parent(folder) }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        return String(decoding: try sandbox.read("\(folder)/\(relative)"), as: UTF8.self)
    }

    /// The example unit runs `serve` with options it has, as systemd's notify-reload needs.
    @Test func exampleUnit_startsServeWithOptionsItTakes() async throws {
        let unit = try Self.document("docs/examples/plugboard.service")
        #expect(unit.contains("\nType=notify-reload\n"))
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let words = exec.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(words.first?.hasSuffix("/plugboard") == true && words.dropFirst().first == "serve", "\(exec)")
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let help = await sandbox.runExactly(["serve", "--help"]).stdout
        for option in words where option.hasPrefix("--") {
            #expect(help.contains("  \(option) "), "serve --help does not list \(option)")
        }
    }

    @Test func holdsTheRootHelpScreen() throws {
        let document = try Self.cliDocument()
        #expect(document.contains("```\n" + HelpTests.rootHelp + "```\n"))
    }

    @Test func namesEveryCommandAndOption() async throws {
        let document = try Self.cliDocument()
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        for path in [["check"], ["plugins"], ["services"], ["inspect"], ["graph"], ["storage", "put"],
                     ["storage", "get"], ["storage", "head"], ["storage", "delete"], ["storage", "list"], ["serve"], ["publish"], ["new-contract"]] {
            #expect(document.contains("## plugboard \(path[0])") || document.contains("### storage \(path[1])"),
                    "no section for \(path)")
            let help = await sandbox.runExactly(path + ["--help"]).stdout
            // Every option of the screen, as "--name".
            let options = help.split(separator: "\n").filter { $0.hasPrefix("  -") }.compactMap { line -> String? in
                line.split(separator: " ").first { $0.hasPrefix("--") }.map(String.init)
            }
            #expect(!options.isEmpty)
            for option in options {
                #expect(document.contains("`\(option)"), "docs/CLI.md does not mention \(option) of \(path)")
            }
        }
    }
}
