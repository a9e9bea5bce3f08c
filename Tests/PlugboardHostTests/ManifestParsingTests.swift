import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// Valid manifests: every field read, defaults applied.
@Suite struct ManifestParsingTests {
    static let full = """
        {
          "$schema": "docs/plugins.schema.json",
          "schemaVersion": 1,
          "environment": "staging",
          "hotSwap": {"enabled": true, "allowInProduction": true, "debounceMilliseconds": 100,
                      "preflightTimeoutSeconds": 2.5, "drainTimeoutSeconds": 0, "maxRetainedImages": 3},
          "plugins": [
            {"name": "Files", "product": "FileStorage", "config": {"root": "data"}},
            {"name": "S3", "path": "lib/libS3Storage.so", "sha256": "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789",
             "enabled": false, "required": true, "environments": ["staging", "production"], "rank": -5,
             "requires": ["Files"], "config": {"bucket": "photos", "port": 9000}}
          ]
        }
        """

    @Test func fullManifest_readsEveryField() throws {
        let manifest = try ManifestTestSupport.manifest(Self.full)
        #expect(manifest.schemaVersion == 1)
        #expect(manifest.defaultEnvironment == .staging)
        #expect(manifest.path == "/srv/app/plugins.json")
        #expect(manifest.directory == "/srv/app")
        #expect(manifest.hotSwap == HotSwapSettings(enabled: true, allowInProduction: true, debounceMilliseconds: 100,
                                                    preflightTimeoutSeconds: 2.5, drainTimeoutSeconds: 0,
                                                    maxRetainedImages: 3))
        #expect(manifest.plugins.map(\.name) == ["Files", "S3"])

        let s3 = try #require(manifest.plugin(named: "S3"))
        #expect(s3.source == .path("/srv/app/lib/libS3Storage.so"))
        #expect(s3.sha256 == "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
        #expect(s3.enabled == false)
        #expect(s3.required == true)
        #expect(s3.environments == [.staging, .production])
        #expect(s3.rank == -5)
        #expect(s3.requires == ["Files"])
        #expect(s3.index == 1)
        #expect(s3.location.description == "9:5")
        #expect(s3.origin == "/srv/app/plugins.json:9:5")
        #expect(s3.redactedConfig == .object(["bucket": .string("photos"), "port": .integer(9000)]))
    }

    @Test func pluginDefaults_areEnabledNotRequiredAllEnvironmentsRankZeroNoConfig() throws {
        let manifest = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A"}]}"#)
        let plugin = try #require(manifest.plugins.first)
        #expect(plugin.source == .product("A"))
        #expect(plugin.sha256 == nil)
        #expect(plugin.enabled)
        #expect(!plugin.required)
        #expect(plugin.environments == Environment.all)
        #expect(plugin.rank == 0)
        #expect(plugin.requires.isEmpty)
        #expect(plugin.redactedConfig == .object([:]))
        #expect(try plugin.resolvedConfig(environment: [:]).values.isEmpty)
    }

    @Test func manifestDefaults_noEnvironmentAndHotSwapOff() throws {
        let manifest = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": []}"#)
        #expect(manifest.defaultEnvironment == nil)
        #expect(manifest.plugins.isEmpty)
        #expect(manifest.hotSwap == HotSwapSettings())
        #expect(manifest.hotSwap.enabled == false)
        #expect(manifest.hotSwap.allowInProduction == false)
        #expect(manifest.selectedPlugins(for: .production).isEmpty)
    }

    @Test func rank_acceptsIntegralNumbers_asJSONSchemaDoes() throws {
        let manifest = try ManifestTestSupport.manifest(#"{"schemaVersion": 1.0, "plugins": [{"name": "a", "product": "A", "rank": 1e2}]}"#)
        #expect(manifest.plugins.first?.rank == 100)
    }

    @Test func samePluginDefinition_comparesEqual_wherever_itIsWritten() throws {
        let a = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "config": {"k": 1}}]}"#)
        let b = try ManifestTestSupport.manifest("""
            {"schemaVersion": 1,
             "plugins": [{"name": "b", "product": "B"}, {"config": {"k": 1}, "product": "A", "name": "a"}]}
            """)
        #expect(a.plugins[0] == b.plugins[1])
        let c = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "config": {"k": 2}}]}"#)
        #expect(a.plugins[0] != c.plugins[0])
    }

    @Test func errorCodes_areAllManifestLevel() {
        let codes: [PlugboardError.Code] = [
            .manifestNotFound, .manifestUnreadable, .manifestSyntax, .manifestDuplicateKey, .manifestTooLarge,
            .manifestTooDeep, .manifestUnsupportedVersion, .manifestMissingKey, .manifestUnknownKey, .manifestWrongType,
            .manifestInvalidValue, .manifestConflictingKeys, .manifestDuplicatePlugin, .manifestUnknownRequirement,
            .manifestRequirementCycle, .manifestMissingVariable,
        ]
        #expect(codes.allSatisfy { $0.area == "manifest" })
        #expect(Set(codes).count == codes.count)
    }
}
