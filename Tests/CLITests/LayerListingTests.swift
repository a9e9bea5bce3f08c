import PlugboardHost
import Testing

/// `services` and `graph` over a stack: QuotaStorage wrapping MemoryStorage. Without a
/// layer their output is as before (ListingTests).
@Suite struct LayerListingTests {
    static let manifest = ManifestText.make([
        #"{"name": "Quota", "product": "QuotaStorage", "wraps": "Mem", "rank": -5, "config": {"maxBytes": 1024}}"#,
        #"{"name": "Mem", "product": "MemoryStorage"}"#,
    ])

    func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.write("plugins.json", Self.manifest)
        return sandbox
    }

    @Test func services_showTheStack_topFirst_withWhatEachLayerWraps() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let text = await sandbox.run(["services", "--log-level", "critical"])
        expectRun(text, status: 0, stdout: .exactly("""
            SERVICE                     NAME  RANK  SCOPE      OWNER  IMPLEMENTATION                       ACTIVE  WRAPS
            PlugboardAPI.ObjectStorage  -     -5    singleton  Quota  QuotaStorage.QuotaStorage            yes     Mem
            PlugboardAPI.ObjectStorage  -     0     singleton  Mem    MemoryStorage.FaultInjectingStorage  no      -

            """), stderr: .empty)
        let result = await sandbox.run(["services", "--json"])
        expectRun(result, status: 0)
        let list = try #require(try result.json().elements)
        #expect(list.count == 2)
        #expect(list[0].keys == ["service", "name", "rank", "scope", "owner", "implementation", "active", "wraps"])
        #expect(list[0]["wraps"]?.string == "Mem" && list[0]["active"]?.bool == true)
        #expect(list[1].keys == ["service", "name", "rank", "scope", "owner", "implementation", "active"])
    }

    @Test func graph_drawsAWrapsEdge_andTheJSONHasWraps() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["graph", "--log-level", "critical"])
        expectRun(result, status: 0, stdout: .contains(#"  "Quota" -> "Mem" [label="wraps", style=bold, color=blue];"#), stderr: .empty)
        let json = await sandbox.run(["graph", "--json"])
        expectRun(json, status: 0)
        let plugins = try #require(try json.json()["plugins"]?.elements)
        #expect(plugins[0].keys == ["name", "state", "requires", "services", "wraps"])
        #expect(plugins[0]["wraps"]?.string == "Mem")
        #expect(plugins[1].keys == ["name", "state", "requires", "services"])
    }
}
