#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardTesting
import Testing

/// `PluginUnderTest`, the entry point plugin authors' tests use: a real plugin file goes
/// through the host's checks, and every refusal comes back as the host's own error.
@Suite struct PluginUnderTestTests {
    @Test func builtProduct_loadsIntoAFreshContainer_andPassesTheConformanceSuite() async throws {
        let plugin = try await PluginUnderTest.load(product: "MemoryStorage")
        #expect(plugin.name == "MemoryStorage")
        #expect(plugin.services == ["PlugboardAPI.ObjectStorage"])
        #expect(plugin.header == PluginHeader.expected)
        #expect(plugin.path.hasSuffix("/libMemoryStorage.so"))
        #expect(plugin.sha256.count == 64)
        let report = await plugin.objectStorageConformance(options: .init(includeLargeObjects: false)).run()
        #expect(report.allPassed, "\(report)")
        await plugin.shutdown()
    }

    @Test func eachLoad_hasItsOwnContainer() async throws {
        let first = try await PluginUnderTest.load(product: "MemoryStorage")
        let second = try await PluginUnderTest.load(product: "MemoryStorage")
        _ = try await first.storage().put("only-in-first", data: [1], contentType: nil, metadata: [:])
        await #expect(throws: PlugboardError.self) { try await second.storage().head("only-in-first") }
    }

    /// Several products into ONE container, in order, each with its own config: what a
    /// consumer's test needs to reach its provider's service.
    @Test func severalProducts_loadIntoOneContainer_eachWithItsConfig() async throws {
        var template = Array("/tmp/put-together-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        try #require(made)
        let root = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { _ = system("rm -rf '\(root)'") }
        let plugins = try await PluginUnderTest.load(products: ["MemoryStorage", "FileStorage"],
                                                     configs: ["FileStorage": ["root": .string(root)]])
        #expect(plugins.map(\.name) == ["MemoryStorage", "FileStorage"])
        #expect(plugins[0].container === plugins[1].container)
        #expect(Set(plugins[1].container.registrations().map(\.owner)) == ["MemoryStorage", "FileStorage"])
        await plugins[1].shutdown()

        // A product that fails stops the load with its own error, as the host reports it.
        let refused = await failure {
            _ = try await PluginUnderTest.load(products: ["MemoryStorage", "FileStorage"], configs: ["FileStorage": [:]])
        }
        #expect(refused?.code == .configInvalid, "\(String(describing: refused))")
    }

    /// Entries with ranks, as a manifest gives them: the higher-ranked provider resolves,
    /// whatever the order of loading, and each entry's name owns its registrations.
    @Test func entries_loadWithTheirRanksAndNames() async throws {
        let plugins = try await PluginUnderTest.load([
            .init(product: "MemoryStorage", name: "Low", rank: -1),
            .init(product: "MemoryStorage", name: "High", config: ["failOperations": .array([.string("head")])], rank: 3),
        ])
        defer { Task { await plugins[0].shutdown() } }
        #expect(plugins.map(\.name) == ["Low", "High"])
        #expect(plugins[0].container.registrations().map(\.owner) == ["High", "Low"])
        let error = await failure { _ = try await plugins[0].storage().head("k") }
        #expect(error?.code == .storageUnavailable, "the High entry's storage answers: \(String(describing: error))")
    }

    @Test func configReachesThePlugin_andABadOneIsThePluginsOwnError() async throws {
        let failing = try await PluginUnderTest.load(product: "MemoryStorage", config: ["failOperations": .array([.string("get")])])
        let error = await failure { _ = try await failing.storage().get("k") }
        #expect(error?.code == .storageUnavailable, "\(String(describing: error))")

        let refused = await failure {
            _ = try await PluginUnderTest.load(product: "MemoryStorage", config: ["failureRate": .integer(2)])
        }
        #expect(refused?.code == .configInvalid, "\(String(describing: refused))")
    }

    @Test func productNotBuilt_saysWhereItLookedAndWhatToDo() async throws {
        let error = await failure { _ = try await PluginUnderTest.load(product: "NoSuchPlugin") }
        #expect(error?.code.rawValue == "loader.file_not_found")
        #expect(error?.detail?.contains(PluginUnderTest.productPath("NoSuchPlugin")) == true)
        #expect(error?.hint?.contains("dynamic library product") == true)
        // A plugin of the checkout (a backing under a layer of another package) is looked
        // for in the checkout's build too, and the hint builds it there.
        #expect(error?.detail?.contains("\(PluginUnderTest.sdkCheckout)/.build/debug/libNoSuchPlugin.so") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("(cd \(PluginUnderTest.sdkCheckout) && swift build --product NoSuchPlugin)") == true, "\(String(describing: error))")
    }

    @Test func aFileThatIsNotAPlugin_isRefusedBeforeLoading_withTheLoadersCode() async throws {
        var template = Array("/tmp/put-notelf-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(path) }
        let text = Array("not a shared object\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, 0o644)
        close(fd)
        let error = await failure { _ = try await PluginUnderTest.load(path: path, name: "Text") }
        #expect(error?.code.rawValue == "loader.not_elf", "\(String(describing: error))")
    }

    /// The PlugboardError `body` throws; records an issue when it throws nothing.
    private func failure(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> PlugboardError? {
        do {
            try await body()
            Issue.record("expected a PlugboardError, nothing was thrown", sourceLocation: sourceLocation)
            return nil
        } catch let error as PlugboardError {
            return error
        } catch {
            Issue.record("expected a PlugboardError, got \(error)", sourceLocation: sourceLocation)
            return nil
        }
    }
}
