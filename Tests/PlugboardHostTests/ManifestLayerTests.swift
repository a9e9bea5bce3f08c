import PlugboardAPI
import PlugboardHost
import Testing

/// `wraps`: a plugin whose layer stands above another plugin's provider. Checked as
/// `requires` is, and an implied requirement.
@Suite struct ManifestLayerTests {
    static func plugins(_ lines: String...) -> String {
        "{\n  \"schemaVersion\": 1,\n  \"plugins\": [\n"
            + lines.map { "    " + $0 }.joined(separator: ",\n") + "\n  ]\n}\n"
    }

    @Test func wraps_isDecoded_andLoadsTheLayerAfterWhatItWraps() throws {
        let manifest = try ManifestTestSupport.manifest(Self.plugins(
            #"{"name": "Quota", "product": "QuotaStorage", "wraps": "Files", "requires": ["Keys"]}"#,
            #"{"name": "Files", "product": "FileStorage"}"#,
            #"{"name": "Keys", "product": "K"}"#))
        let quota = try #require(manifest.plugins.first)
        #expect(quota.wraps == "Files")
        #expect(quota.requires == ["Keys"])
        #expect(quota.dependencies == ["Keys", "Files"])
        #expect(manifest.plugins[1].wraps == nil)
        #expect(manifest.selectedPlugins(for: .development).map(\.name) == ["Files", "Keys", "Quota"])
    }

    @Test func aWrappedPluginNotInTheManifest_isRefused_withTheClosestName() {
        let error = ManifestTestSupport.manifestError(Self.plugins(
            #"{"name": "Files", "product": "FileStorage"}"#,
            #"{"name": "Quota", "product": "QuotaStorage", "wraps": "Flies"}"#))
        #expect(error?.code == .manifestUnknownLayerTarget)
        #expect(error?.message.contains(#"plugin "Quota" wraps "Flies", which is not in the manifest"#) == true,
                "\(String(describing: error))")
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == "5:59")
        #expect(error?.hint == #"Did you mean "Files"?"#)
    }

    @Test func aPluginWrappingItself_isRefused() {
        let error = ManifestTestSupport.manifestError(Self.plugins(#"{"name": "a", "product": "A", "wraps": "a"}"#))
        #expect(error?.code == .manifestLayerWrapsItself)
        #expect(error?.message.contains(#"plugin "a" wraps itself"#) == true)
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == "4:44")
    }

    @Test func aCycleThroughWrapsAndRequires_isRefused_withItsPath() {
        let error = ManifestTestSupport.manifestError(Self.plugins(
            #"{"name": "a", "product": "A", "wraps": "b"}"#,
            #"{"name": "b", "product": "B", "requires": ["a"]}"#))
        #expect(error?.code == .manifestRequirementCycle)
        #expect(error?.message.contains(#"requirement cycle (through "requires" and "wraps"): a -> b -> a"#) == true,
                "\(String(describing: error))")
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == "4:44")
    }

    @Test func wrapsOfTheWrongType_orEmpty_isRefused() {
        let number = ManifestTestSupport.manifestError(Self.plugins(#"{"name": "a", "product": "A", "wraps": 1}"#))
        #expect(number?.code == .manifestWrongType)
        #expect(number?.message.contains("plugins[0].wraps: expected a string, found an integer") == true)
        let empty = ManifestTestSupport.manifestError(Self.plugins(#"{"name": "a", "product": "A", "wraps": ""}"#))
        #expect(empty?.code == .manifestInvalidValue)
    }

    @Test func changingWraps_changesThePlugin() throws {
        let a = try ManifestTestSupport.manifest(Self.plugins(#"{"name": "q", "product": "Q", "wraps": "f"}"#,
                                                              #"{"name": "f", "product": "F"}"#, #"{"name": "g", "product": "G"}"#))
        let b = try ManifestTestSupport.manifest(Self.plugins(#"{"name": "q", "product": "Q", "wraps": "g"}"#,
                                                              #"{"name": "f", "product": "F"}"#, #"{"name": "g", "product": "G"}"#))
        #expect(a.plugins[0] != b.plugins[0])
    }
}
