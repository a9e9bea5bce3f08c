import PlugboardAPI
import PlugboardHost
import Testing

/// A plugin entry's remote `source`: exactly one of path, product and source, and the pin
/// that says which bytes to accept from the store.
@Suite struct RemoteSourceManifestTests {
    static let pin = String(repeating: "ab", count: 32)

    @Test func sourceWithoutSHA256_isRefused_namingTheEntryAndPublish() throws {
        let error = try #require(ManifestTestSupport.manifestError(
            #"{"schemaVersion": 1, "plugins": [{"name": "S3", "source": "s3://plugins/S3/x.so"}]}"#))
        #expect(error.code == .manifestMissingKey)
        #expect(error.message.contains(#"missing key "sha256" in plugins[0]"#), "\(error.message)")
        #expect(error.detail?.contains(#""S3""#) == true && error.detail?.contains("s3://plugins/S3/x.so") == true)
        #expect(error.hint?.contains("plugboard publish") == true)
    }

    @Test func sourceBesidePathOrProduct_isRefused() throws {
        let error = try #require(ManifestTestSupport.manifestError(
            #"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A", "source": "http://h/a.so", "sha256": "\#(Self.pin)"}]}"#))
        #expect(error.code == .manifestConflictingKeys)
        #expect(error.message.contains(#"has both "product" and "source""#), "\(error.message)")
    }

    @Test func sourceIsReadAsAStoreLocation() throws {
        let manifest = try Manifest.parse(bytes: Array(
            #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "s3://plugins/a/b.so", "sha256": "\#(Self.pin.uppercased())"}]}"#.utf8),
            path: "/tmp/plugins.json")
        let plugin = try #require(manifest.plugins.first)
        #expect(plugin.sha256 == Self.pin)
        guard case .remote(let source) = plugin.source else {
            Issue.record("expected a remote source, found \(plugin.source)")
            return
        }
        #expect(source.location == .s3(bucket: "plugins", key: "a/b.so"))
        #expect(plugin.source.description == #"source "s3://plugins/a/b.so""#)
    }

    @Test(arguments: ["ftp://h/a.so", "s3://plugins", "s3://x/a.so", "s3://plugins/a//b.so", "http://user:pw@h/a.so", "http://h/a b.so"])
    func notAStoreURL_isRefusedWithWhatWasFound(_ text: String) throws {
        let error = try #require(ManifestTestSupport.manifestError(
            #"{"schemaVersion": 1, "plugins": [{"name": "a", "source": "\#(text)", "sha256": "\#(Self.pin)"}]}"#))
        #expect(error.code == .manifestInvalidValue, "\(error)")
        #expect(error.message.contains("source is not a plugin store URL"))
        #expect(!"\(error)".contains("pw@"), "a password in the URL is never echoed")
    }
}
