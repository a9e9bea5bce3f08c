import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import Testing

/// libMemoryStorage.so, loaded through the host's loader: the whole conformance suite,
/// and the fault injection its config turns on.
@Suite struct MemoryStorageTests {
    @Test func passesTheWholeConformanceSuite_includingLargeObjectsAndConcurrentWriters() async throws {
        let storage = try await PluginFixtures.loadStorage("MemoryStorage")
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.result(named: "concurrent_writers")?.outcome == .passed)
    }

    @Test func failOperationsGet_makesEveryGetUnavailable_andLeavesTheRestAlone() async throws {
        let storage = try await PluginFixtures.loadStorage("MemoryStorage", config: ["failOperations": .array([.string("get")])])
        _ = try await storage.put("k", data: [1, 2, 3], contentType: nil, metadata: [:])
        #expect(try await storage.head("k").size == 3)
        let error = await #expect(throws: PlugboardError.self) { try await storage.get("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("get") == true)
        #expect(try await storage.list(prefix: "", limit: 10, continuationToken: nil).objects.count == 1)
    }

    @Test func readsAreAnsweredAtOnce_exceptWithFaultsOn() async throws {
        let plain = try await PluginFixtures.loadStorage("MemoryStorage")
        _ = try await plain.put("k", data: [1, 2, 3], contentType: nil, metadata: [:])
        let ready = try #require(try plain.getWithoutWaiting("k", range: .suffix(2)))
        #expect(ready.bytes == [2, 3])
        #expect(ready.range == 1..<3)
        #expect(ready.info.size == 3)
        #expect(throws: PlugboardError.self) { try plain.getWithoutWaiting("missing", range: nil) }
        // Injected latency and failures live on the async way: a read at once would skip them.
        for config: [String: ConfigValue] in [["latencyMilliseconds": .integer(1)], ["failOperations": .array([.string("get")])],
                                              ["failureRate": .number(0.5)]] {
            // Not even the base's not_found comes back: the read goes to the async get.
            let faulty = try await PluginFixtures.loadStorage("MemoryStorage", config: config)
            #expect(try faulty.getWithoutWaiting("k", range: nil) == nil, "\(config)")
        }
    }

    @Test func latency_delaysEveryOperation() async throws {
        let storage = try await PluginFixtures.loadStorage("MemoryStorage", config: ["latencyMilliseconds": .integer(60)])
        let clock = ContinuousClock()
        let elapsed = try await clock.measure {
            _ = try await storage.put("k", data: [1], contentType: nil, metadata: [:])
            _ = try await storage.get("k")
        }
        #expect(elapsed >= .milliseconds(120))
    }

    @Test func failureRateOne_failsEveryOperationAsUnavailable() async throws {
        let storage = try await PluginFixtures.loadStorage("MemoryStorage", config: ["failureRate": .number(1.0)])
        let operations: [@Sendable () async throws -> Void] = [
            { _ = try await storage.put("k", data: [], contentType: nil, metadata: [:]) },
            { _ = try await storage.get("k") },
            { _ = try await storage.head("k") },
            { try await storage.delete("k") },
            { _ = try await storage.list(prefix: "", limit: 1, continuationToken: nil) },
        ]
        for operation in operations {
            let error = await #expect(throws: PlugboardError.self) { try await operation() }
            #expect(error?.code == .storageUnavailable)
        }
    }

    @Test(arguments: [
        ("latencyMilliseconds", ConfigValue.integer(-1)),
        ("latencyMilliseconds", .integer(60_001)),
        ("latencyMilliseconds", .string("10")),
        ("failureRate", .number(1.5)),
        ("failureRate", .number(-0.1)),
        ("failureRate", .bool(true)),
        ("failOperations", .array([.string("copy")])),
        ("failOperations", .string("get")),
        ("seed", .string("x")),
        ("latency", .integer(5)),
    ])
    func badConfigValues_areRefused_namingTheKey(key: String, value: ConfigValue) async throws {
        let loaded = try await PluginFixtures.load("MemoryStorage", config: [key: value])
        #expect(loaded.record.state == .failed)
        #expect(loaded.record.error?.code == .configInvalid)
        #expect(loaded.record.error?.message.contains("config.\(key)") == true, "\(String(describing: loaded.record.error))")
        #expect(throws: PlugboardError.self) { try loaded.storage() }
    }
}
