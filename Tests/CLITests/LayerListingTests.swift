import PlugboardHost
import PlugboardJSON
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
            SERVICE                              NAME            RANK  SCOPE      OWNER  IMPLEMENTATION                       ACTIVE  WRAPS
            PlugboardAPI.ObjectStorage           -               -5    singleton  Quota  QuotaStorage.QuotaStorage            yes     Mem
            PlugboardAPI.ObjectStorage           -               0     singleton  Mem    MemoryStorage.FaultInjectingStorage  no      -
            PlugboardAPI.PlugboardError.Mapping  quota.exceeded  -5    instance   Quota  PlugboardAPI.PlugboardError.Mapping  yes     -

            """), stderr: .empty)
        let result = await sandbox.run(["services", "--json"])
        expectRun(result, status: 0)
        let list = try #require(try result.json().elements)
        // The stack, then QuotaStorage's mapping of its own code (a registration of its own).
        #expect(list.count == 3)
        #expect(list[2]["service"]?.string == "PlugboardAPI.PlugboardError.Mapping" && list[2]["name"]?.string == "quota.exceeded")
        #expect(list[0].keys == ["service", "name", "rank", "scope", "owner", "implementation", "active", "wraps"])
        #expect(list[0]["wraps"]?.string == "Mem" && list[0]["active"]?.bool == true)
        #expect(list[1].keys == ["service", "name", "rank", "scope", "owner", "implementation", "active"])
    }

    /// `check` runs the stack in a preflight child, which is handed what each plugin wraps.
    @Test func check_loadsTheStack() async throws {
        let sandbox = try sandbox()
        defer { sandbox.remove() }
        let result = await sandbox.run(["check", "--json"])
        expectRun(result, status: 0)
        let plugins = try #require(try result.json().elements)
        #expect(plugins.map { $0["state"]?.string } == ["active", "active"])
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

    /// The admin route shows the same stack as the CLI, and serve's object routes go
    /// through the layer.
    @Test func adminServices_showTheStack_andObjectsGoThroughTheLayer() async throws {
        let server = try ServerProcess(manifest: Self.manifest)
        let services = try server.client().request("GET", "/v1/admin/services")
        #expect(services.status == 200)
        let list = try #require(try JSONValue.parse(services.text).elements)
        #expect(list.map { $0["owner"]?.string } == ["Quota", "Mem", "Quota"], "the stack, then QuotaStorage's error mapping")
        #expect(list[0]["wraps"]?.string == "Mem")
        let cli = await server.sandbox.run(["services", "--json"])
        #expect(services.text == cli.stdout)
        let small = try server.client().request("PUT", "/v1/objects/small", headers: [("Content-Type", "text/plain")],
                                                body: Array(repeating: 1, count: 1000))
        #expect(small.status == 200 || small.status == 201, "\(small.text)")
        let big = try server.client().request("PUT", "/v1/objects/big", headers: [("Content-Type", "text/plain")],
                                              body: Array(repeating: 1, count: 100))
        #expect(big.status == 403, "the plugin's mapping of its own code: \(big.text)")
        #expect(big.errorCode == "quota.exceeded", "\(big.text)")
    }
}
