#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport
import PlugboardTesting
import Testing

/// The in-tree storages run isolated (`"isolation": "process"`): the host's proxy passes
/// the whole conformance suite through the worker protocol, as the plugin does in process:
/// streamed bodies both ways, ranges, conditions, listings, errors with their codes.
@Suite struct IsolatedStorageConformanceTests {
    /// The test process's environment (a sanitizer's options included: the workers are the
    /// same build), with the Swift backtracer off, as the host gives its children.
    static let environment: [String: String] = {
        var out: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") { out[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            entry += 1
        }
        out["SWIFT_BACKTRACE"] = "enable=no"
        return out
    }()

    /// A host over a manifest with `plugin` isolated, its workers run by the built plugboard.
    static func host(_ plugin: String, folder: String) async throws -> PluginHost {
        let manifest = "\(folder)/plugins.json"
        let text = #"{"schemaVersion": 1, "plugins": [\#(plugin)]}"#
        let fd = open(manifest, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        var configuration = PluginHost.Configuration(manifestPath: manifest, cacheDirectory: "\(folder)/cache",
                                                     processEnvironment: Self.environment,
                                                     productSearchPath: [BuildProducts.folder],
                                                     preflightExecutable: "\(BuildProducts.folder)/plugboard")
        configuration.logger = .disabled
        return try await PluginHost.start(configuration)
    }

    @Test(arguments: [#"{"name": "Mem", "product": "MemoryStorage", "isolation": "process"}"#,
                      #"{"name": "Mem", "product": "MemoryStorage", "isolation": "process", "worker": {"transport": "socket"}}"#,
                      #"{"name": "Files", "product": "FileStorage", "isolation": "process", "sandbox": {"readWrite": ["data"]}, "config": {"root": "data"}}"#])
    func anIsolatedStoragePassesTheWholeConformanceSuite(_ plugin: String) async throws {
        let folder = BuildProducts.temporaryFolder("isolated-conformance")
        let host = try await Self.host(plugin, folder: folder)
        let record = try #require(host.records.first)
        try #require(record.state == .active, "\(record.error.map(String.init(describing:)) ?? "")")
        #expect(record.isolation.description == "process")
        let worker = try #require(record.worker)
        #expect(worker.pid != nil && worker.pid != getpid())
        let storage: any ObjectStorage = try host.container.resolve()
        // A fresh store for each of the suite's checks would be a fresh worker each; the
        // suite cleans up after itself over one.
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.result(named: "concurrent_writers")?.outcome == .passed)
        #expect(worker.restarts.isEmpty, "\(worker.crashes.map(\.message))")
        await host.shutdown()
        #expect(worker.status == .stopped)
    }

    /// An isolated layer (QuotaStorage) over FileStorage in process or isolated: every
    /// call crosses to the layer's worker and back to the host for the storage below.
    @Test(arguments: [#"{"name": "Files", "product": "FileStorage", "config": {"root": "data"}}"#,
                      #"{"name": "Files", "product": "FileStorage", "isolation": "process", "sandbox": {"readWrite": ["data"]}, "config": {"root": "data"}}"#])
    func anIsolatedLayerPassesTheWholeConformanceSuite(_ files: String) async throws {
        let folder = BuildProducts.temporaryFolder("isolated-layer-conformance")
        let quota = #"{"name": "Quota", "product": "QuotaStorage", "wraps": "Files", "isolation": "process", "config": {"maxBytes": 1073741824}}"#
        let host = try await Self.host(files + ", " + quota, folder: folder)
        let record = try #require(host.records.first { $0.name == "Quota" })
        try #require(record.state == .active, "\(record.error.map(String.init(describing:)) ?? "")")
        let worker = try #require(record.worker)
        let storage: any ObjectStorage = try host.container.resolve()
        #expect(String(describing: type(of: storage)).contains("IsolatedStorage"), "the layer's proxy answers: \(type(of: storage))")
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(worker.restarts.isEmpty, "\(worker.crashes.map(\.message))")
        await host.shutdown()
        #expect(worker.status == .stopped)
    }

    @Test func aWorkerCrashIsAnEventAndCountsInTheHostsErrorFigures() async throws {
        let folder = BuildProducts.temporaryFolder("isolated-crash")
        let host = try await Self.host(#"{"name": "Flaky", "product": "MisbehavingPlugin", "isolation": "process", "config": {"fault": "segfault", "faultIn": "get", "faultKey": "boom"}}"#,
                                       folder: folder)
        let storage: any ObjectStorage = try host.container.resolve()
        #expect(host.isolatedCrashes == 0)
        let error = await #expect(throws: PlugboardError.self) { try await storage.get("boom") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("the worker's only call, likely what ended it") == true, "\(String(describing: error))")
        // Alone on its worker, the call is not sent again (it would kill the spare too): one
        // worker died, reported once its reaper has seen the process go (which may come just
        // after the call's failure).
        let bound = ContinuousClock.now + .seconds(60)
        while host.events.since(0).filter({ $0.kind == "plugin_crashed" }).isEmpty, ContinuousClock.now < bound {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(host.isolatedCrashes == 1)
        let crashes = host.events.since(0).filter { $0.kind == "plugin_crashed" }
        #expect(crashes.count == 1 && crashes.allSatisfy { $0.plugin == "Flaky" && $0.message?.contains("SIGSEGV") == true })
        await host.shutdown()
    }
}
