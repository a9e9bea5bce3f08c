#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// The worked contract-package example (Examples/GreeterContract, Examples/GreeterPlugins),
/// built at test time as a third party would build it, then loaded by the host from a
/// manifest: the provider and the consumer share libGreeterContract.so through the cache,
/// and a plugin that copied the protocol registers another type, which the error names.
@Suite(.serialized) struct ContractPackageTests {
    /// The example's build folder (`<scratch>/debug`), built once per test process.
    static let products: Result<String, FixtureError> = {
        let scratch = LoaderFixtures.temporaryFolder("plugboard-greeter-build")
        scratchFolder = scratch
        atexit { if let folder = ContractPackageTests.scratchFolder { system("rm -rf '\(folder)'") } }
        let package = "\(LoaderFixtures.repositoryRoot)/Examples/GreeterPlugins"
        let command = "swift build --package-path '\(package)' --scratch-path '\(scratch)' > '\(scratch)/build.log' 2>&1"
        let status = system(command)
        guard status == 0 else {
            let log = String(decoding: (try? PluginFile.readAll("\(scratch)/build.log", plugin: "log")) ?? [], as: UTF8.self)
            return .failure(FixtureError("building Examples/GreeterPlugins failed (\(status)):\n\(log.suffix(3000))"))
        }
        return .success("\(scratch)/debug")
    }()

    /// The build folder (about 30 MB), removed when the test process exits. Set once, in
    /// the initializer of `products`, which Swift runs exactly once.
    nonisolated(unsafe) static var scratchFolder: String?

    /// The build runs for many seconds in system(): it is touched (and waited for by the
    /// tests that come while it runs) on threads of their own, never on one of the
    /// concurrency pool's two threads (see ``OwnThread``).
    static func buildProducts() async throws -> String {
        try await OwnThread.run { products }.get()
    }

    /// Starts a host from a manifest listing `plugins` (name, library, extra JSON members).
    static func host(_ plugins: [(name: String, library: String, extra: String)], products: String) async throws -> PluginHost {
        let folder = LoaderFixtures.temporaryFolder("plugboard-greeter")
        let entries = plugins.map { #"{"name": "\#($0.name)", "path": "\#(products)/lib\#($0.library).so"\#($0.extra)}"# }
        let manifest = #"{"schemaVersion": 1, "plugins": [\#(entries.joined(separator: ", "))]}"#
        try LoaderFixtures.write(Array(manifest.utf8), to: "\(folder)/plugins.json")
        return try await PluginHost.start(.init(manifestPath: "\(folder)/plugins.json", environment: .testing,
                                                cacheDirectory: "\(folder)/cache"))
    }

    @Test func consumer_resolvesTheProvidersService_throughOneSharedContractLibrary() async throws {
        let products = try await Self.buildProducts()
        let host = try await Self.host([
            ("GreeterProvider", "GreeterProvider", #", "config": {"salutation": "Welcome"}"#),
            ("GreeterConsumer", "GreeterConsumer", #", "requires": ["GreeterProvider"], "config": {"audience": "operators"}"#),
        ], products: products)
        #expect(host.records.map(\.state) == [.active, .active], "\(host.records.map { "\($0.name): \($0.error.map { "\($0)" } ?? "ok")" })")
        #expect(host.records.map(\.services) == [["GreeterContract.Greeter"], ["Swift.String"]])
        #expect(try host.container.resolve(String.self, name: "greeting") == "Welcome, operators!")
        await host.shutdown()
    }

    @Test func aCopiedProtocol_isAnotherType_andTheErrorNamesBoth() async throws {
        let products = try await Self.buildProducts()
        let host = try await Self.host([
            ("CopiedGreeter", "CopiedGreeter", ""),
            ("GreeterConsumer", "GreeterConsumer", #", "requires": ["CopiedGreeter"]"#),
        ], products: products)
        // Every singleton is built at load, so the consumer fails there, not at its first
        // resolve, and nothing of it is published.
        #expect(host.records.map(\.state) == [.active, .failed])
        #expect(host.records.first?.services == ["CopiedGreeter.Greeter"])
        #expect(!host.container.isRegistered(String.self, name: "greeting"))
        let error = host.records.last?.error
        // The consumer's factory failed because its own resolve found nothing: the root
        // cause names the registered copy and the requested contract type.
        var cause: PlugboardError? = error
        while let next = cause?.underlying as? PlugboardError { cause = next }
        #expect(cause?.code == .notRegistered, "\(String(describing: error))")
        #expect(cause?.detail?.contains("Registered CopiedGreeter.Greeter, requested GreeterContract.Greeter") == true,
                "\(String(describing: cause))")
        #expect(cause?.hint?.contains("contract package") == true)
        await host.shutdown()
    }
}
