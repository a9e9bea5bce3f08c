#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard new-contract`: the contract package and the plugins package it writes build
/// out of tree as written, pass their own test (both plugins loaded into one container),
/// and the host loads the provider and the consumer together.
@Suite struct NewContractTests {
    /// The round trip: scaffold, `swift build`, `swift test`, then `plugboard check` and
    /// `plugboard services` with the two built libraries. Minutes on a loaded machine: the
    /// package builds PlugboardAPI and PlugboardTesting once, in debug.
    @Test(.timeLimit(.minutes(15))) func scaffold_builds_passesItsTests_andBothPluginsLoadIntoTheHost() async throws {
        let sandbox = try Sandbox("plugboard-newcontract")
        defer { sandbox.remove() }
        let folder = sandbox.path("acme")
        let created = await sandbox.run(["new-contract", "Greeter", "--dir", folder, "--sdk", NewPluginTests.repositoryRoot, "--json"])
        expectRun(created, status: 0, stderr: .empty)
        #expect(try created.json()["files"]?.strings == [
            "GreeterContract/Package.swift", "GreeterContract/Sources/GreeterContract/Greeter.swift",
            "GreeterPlugins/Package.swift", "GreeterPlugins/Sources/GreeterProvider/GreeterProviderPlugin.swift",
            "GreeterPlugins/Sources/GreeterConsumer/GreeterConsumerPlugin.swift",
            "GreeterPlugins/Tests/GreeterPluginsTests/GreeterPluginsTests.swift", "plugins.snippet.json", "README.md", ".gitignore",
        ])
        // Absolute paths only: the in-repo example's "../.." would not resolve out of tree.
        let manifest = String(decoding: try sandbox.read("acme/GreeterPlugins/Package.swift"), as: UTF8.self)
        #expect(manifest.contains(".package(path: \"\(NewPluginTests.repositoryRoot)/Sources/PlugboardAPI\")"))
        #expect(manifest.contains(".package(path: \"\(folder)/GreeterContract\")"))
        #expect(!manifest.contains("\"../"))
        let provider = String(decoding: try sandbox.read("acme/GreeterPlugins/Sources/GreeterProvider/GreeterProviderPlugin.swift"), as: UTF8.self)
        let h = PluginHeader.expected
        #expect(provider.contains("= (0x4452_4250, 1, \(h.abiVersion), \(h.apiMajor), \(h.apiMinor))\n"))
        let snippet = try JSONValue.parse(String(decoding: try sandbox.read("acme/plugins.snippet.json"), as: UTF8.self))
        #expect(snippet.elements?.compactMap { $0["path"]?.string } == [
            "\(folder)/GreeterPlugins/.build/release/libGreeterProvider.so",
            "\(folder)/GreeterPlugins/.build/release/libGreeterConsumer.so",
        ])

        let (products, testLog) = try await NewPluginTests.buildAndTest("\(folder)/GreeterPlugins", in: sandbox, seconds: 900)
        #expect(testLog.contains("2 tests"), "\(testLog)")
        try sandbox.write("m.json", ManifestText.make([
            #"{"name": "GreeterProvider", "path": "\#(products)/libGreeterProvider.so", "config": {"prefix": "Host"}}"#,
            #"{"name": "GreeterConsumer", "path": "\#(products)/libGreeterConsumer.so", "requires": ["GreeterProvider"], "config": {"request": "hi"}}"#,
        ]))
        let check = await sandbox.run(["check", "--manifest", "m.json", "--json"])
        expectRun(check, status: 0)
        let plugins = try check.json().elements ?? []
        #expect(plugins.map { $0["state"]?.string } == ["active", "active"], "\(check.stdout)")
        #expect(plugins.map { $0["services"]?.strings ?? [] } == [["GreeterContract.Greeter"], ["Swift.String"]])
        let services = await sandbox.run(["services", "--manifest", "m.json", "--json"])
        expectRun(services, status: 0, stdout: .contains("\"GreeterContract.Greeter\"", "\"GreeterConsumer\""))
    }

    @Test func text_listsTheFilesWritten_andTheNextSteps() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["new-contract", "Clock", "--sdk", NewPluginTests.repositoryRoot])
        expectRun(result, status: 0, stdout: .contains("Created contract Clock in \(sandbox.path("Clock")):\n  ClockContract/Package.swift\n",
                                                       "cd \(sandbox.path("Clock"))/ClockPlugins\n"), stderr: .empty)
        let contract = String(decoding: try sandbox.read("Clock/ClockContract/Package.swift"), as: UTF8.self)
        #expect(contract.contains(".library(name: \"ClockContract\", type: .dynamic, targets: [\"ClockContract\"])"))
        #expect(contract.contains("-enable-library-evolution"))
    }

    /// A taken name, and a name whose derived module (NAMEPluginsTests) is too long.
    @Test func aTakenName_orAnOverlongDerivedName_isRefused() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["new-contract", "S3Storage", "--sdk", NewPluginTests.repositoryRoot]), status: 2,
                  stderr: .contains("contract name \"S3Storage\" is taken"))
        expectRun(await sandbox.run(["new-contract", String(repeating: "A", count: 60), "--sdk", NewPluginTests.repositoryRoot]), status: 2,
                  stderr: .contains("invalid contract name"))
    }
}
