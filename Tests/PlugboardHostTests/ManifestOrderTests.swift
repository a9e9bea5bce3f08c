import PlugboardAPI
import PlugboardHost
import Testing

/// Selection per environment and load order by `requires`.
@Suite struct ManifestOrderTests {
    private func manifest(_ plugins: String...) throws -> Manifest {
        try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": ["# + plugins.joined(separator: ",") + "]}")
    }

    @Test func independentPlugins_keepManifestOrder() throws {
        let m = try manifest(#"{"name": "c", "product": "C"}"#, #"{"name": "a", "product": "A"}"#, #"{"name": "b", "product": "B"}"#)
        #expect(m.selectedPlugins(for: .development).map(\.name) == ["c", "a", "b"])
    }

    @Test func requiredPlugins_comeFirst_andTiesKeepManifestOrder() throws {
        let m = try manifest(
            #"{"name": "web", "product": "W", "requires": ["db", "cache"]}"#,
            #"{"name": "log", "product": "L"}"#,
            #"{"name": "cache", "product": "C", "requires": ["log"]}"#,
            #"{"name": "db", "product": "D"}"#,
            #"{"name": "metrics", "product": "M"}"#)
        // Ready at first: log, db, metrics (manifest order: log, db, metrics); log frees cache,
        // which comes before db in manifest order; web waits for both.
        #expect(m.selectedPlugins(for: .development).map(\.name) == ["log", "cache", "db", "web", "metrics"])
    }

    @Test func diamond_isOrderedOnce() throws {
        let m = try manifest(
            #"{"name": "top", "product": "T", "requires": ["left", "right"]}"#,
            #"{"name": "right", "product": "R", "requires": ["base"]}"#,
            #"{"name": "left", "product": "L", "requires": ["base"]}"#,
            #"{"name": "base", "product": "B"}"#)
        #expect(m.selectedPlugins(for: .testing).map(\.name) == ["base", "right", "left", "top"])
    }

    @Test func selection_isDisabledBeforeSkipped() throws {
        let m = try manifest(
            #"{"name": "on", "product": "A"}"#,
            #"{"name": "off", "product": "B", "enabled": false}"#,
            #"{"name": "prodOnly", "product": "C", "environments": ["production"]}"#,
            #"{"name": "offProd", "product": "D", "enabled": false, "environments": ["production"]}"#)
        let byName = Dictionary(uniqueKeysWithValues: m.plugins.map { ($0.name, $0) })
        #expect(byName["on"]?.selection(for: .development) == .selected)
        #expect(byName["off"]?.selection(for: .development) == .disabled)
        #expect(byName["prodOnly"]?.selection(for: .development) == .skipped)
        #expect(byName["prodOnly"]?.selection(for: .production) == .selected)
        #expect(byName["offProd"]?.selection(for: .production) == .disabled)
        #expect(byName["offProd"]?.selection(for: .development) == .disabled)
        #expect(m.selectedPlugins(for: .development).map(\.name) == ["on"])
        #expect(m.selectedPlugins(for: .production).map(\.name) == ["on", "prodOnly"])
        #expect(ManifestPlugin.Selection.skipped.description == "skipped")
    }

    @Test func requirementOnAPluginNotSelected_doesNotDropOrBlockTheRequirer() throws {
        // The loader decides what happens to "web"; the manifest only provides the data.
        let m = try manifest(
            #"{"name": "web", "product": "W", "requires": ["db"]}"#,
            #"{"name": "db", "product": "D", "environments": ["production"]}"#)
        let selected = m.selectedPlugins(for: .development)
        #expect(selected.map(\.name) == ["web"])
        #expect(selected.first?.requires == ["db"])
        #expect(m.plugin(named: "db")?.selection(for: .development) == .skipped)
    }
}
