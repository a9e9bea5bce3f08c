import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Random bytes and random mutations of a valid manifest: the parser and the manifest
/// validation must return or throw, never trap.
@Suite struct JSONParserFuzzTests {
    static let seed = """
        {
          "$schema": "plugins.schema.json",
          "schemaVersion": 1,
          "environment": "development",
          "hotSwap": {"enabled": true, "debounceMilliseconds": 250, "drainTimeoutSeconds": 1.5},
          "plugins": [
            {"name": "Files", "product": "FileStorage", "rank": 10,
             "config": {"root": "data/${BUCKET:-files}", "password": {"secret": "p\\u00e9$${x}"}, "list": [1, -2.5e3, null, true]}},
            {"name": "S3", "path": "plugins/libS3.so", "requires": ["Files"], "environments": ["staging", "production"],
             "sha256": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "enabled": false}
          ]
        }
        """

    /// Bytes that matter to the grammar, to make mutations interesting.
    static let interesting: [UInt8] = Array("{}[]:,\"\\/u0123456789-+.eEtrufalsn $".utf8) + [0x00, 0x0A, 0x7F, 0x80, 0xBF, 0xC0, 0xE0, 0xED, 0xF4, 0xFF]

    @Test func randomBytes_neverCrashTheParser() {
        var rng = SplitMix64(state: 0x5EED_0001)
        for _ in 0..<3_000 {
            let count = Int.random(in: 0...64, using: &rng)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &rng) ? UInt8.random(in: 0...255, using: &rng) : Self.interesting.randomElement(using: &rng) ?? 0
            }
            _ = ManifestTestSupport.jsonError(bytes)
            _ = try? Manifest.parse(bytes: bytes, path: "fuzz.json")
        }
    }

    @Test func mutationsOfAValidManifest_neverCrashParserOrValidation() throws {
        let base = Array(Self.seed.utf8)
        let manifest = try Manifest.parse(bytes: base, path: "/srv/plugins.json")
        #expect(manifest.plugins.count == 2)

        var rng = SplitMix64(state: 0x5EED_0002)
        var accepted = 0
        for _ in 0..<6_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: bytes[at] = Self.interesting.randomElement(using: &rng) ?? 0
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(Self.interesting.randomElement(using: &rng) ?? 0, at: at)
                case 3: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                default:
                    let end = min(bytes.count, at + Int.random(in: 1...12, using: &rng))
                    bytes.insert(contentsOf: Array(bytes[at..<end]), at: at)
                }
            }
            if let manifest = try? Manifest.parse(bytes: bytes, path: "/srv/plugins.json") {
                accepted += 1
                for environment in Environment.all {
                    for plugin in manifest.selectedPlugins(for: environment) {
                        _ = try? plugin.resolvedConfig(environment: ["BUCKET": "b"])
                        _ = plugin.redactedConfig
                        _ = plugin.description
                    }
                }
            }
        }
        // Some mutations (inside strings, digits) leave a valid manifest; those ran through
        // selection, expansion and redaction too.
        #expect(accepted > 0)
    }
}
