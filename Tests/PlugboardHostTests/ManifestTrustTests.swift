import PlugboardAPI
import PlugboardCrypto
@testable import PlugboardHost
import Testing

/// The manifest's `trust` section and a plugin entry's `signature`: read strictly, every
/// malformed key or signature refused with its place and the form expected.
@Suite struct ManifestTrustTests {
    /// RFC 8032's first two test keys (section 7.1), as `plugboard keygen` prints them.
    static let key1 = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
    static let key1ID = "21fe31dfa154a261"
    static let key2 = "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw="
    static let signature = "ed25519:21fe31dfa154a261:" + Base64Fixture.sixtyFourBytes

    private func manifest(trust: String, plugin: String = #"{"name": "a", "product": "A"}"#) throws(PlugboardError) -> Manifest {
        try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [\#(plugin)], "trust": \#(trust)}"#, path: "plugins.json")
    }

    private func error(trust: String = "{}", plugin: String = #"{"name": "a", "product": "A"}"#) -> PlugboardError? {
        ManifestTestSupport.manifestError(#"{"schemaVersion": 1, "plugins": [\#(plugin)], "trust": \#(trust)}"#)
    }

    @Test func keysAndSignature_areRead_withTheKeyIDsAndTheRequirement() throws {
        let m = try manifest(trust: #"{"requireSignatures": true, "keys": [{"name": "release-2026", "ed25519": "\#(Self.key1)"}, {"name": "release-2027", "ed25519": "\#(Self.key2)"}]}"#,
                             plugin: #"{"name": "a", "product": "A", "signature": "\#(Self.signature)"}"#)
        #expect(m.trust.requireSignatures)
        #expect(m.trust.keys.map(\.name) == ["release-2026", "release-2027"])
        #expect(m.trust.keys.first?.keyID == Self.key1ID)
        #expect(m.trust.key(id: Self.key1ID)?.name == "release-2026")
        let signature = try #require(m.plugins.first?.signature)
        #expect(signature.keyID == Self.key1ID && signature.bytes == Array(0..<64))
        #expect(signature.description == Self.signature)
        let signing = m.trust.signing(for: m.plugins[0])
        #expect(signing.required && signing.signature == signature)
    }

    @Test func absent_trustsNothing_andRequiresNothing() throws {
        let m = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [{"name": "a", "product": "A"}]}"#)
        #expect(m.trust == .none)
        #expect(m.plugins[0].signature == nil)
        #expect(m.trust.signing(for: m.plugins[0]) == .none)
    }

    @Test func malformedKeys_areRefusedWithTheirPlaceAndTheFormExpected() {
        let short = error(trust: #"{"keys": [{"name": "k", "ed25519": "AAAA"}]}"#)
        #expect(short?.code == .manifestInvalidValue)
        #expect(short?.message == "plugins.json:1:110: trust.keys[0].ed25519: not an Ed25519 public key")
        #expect(short?.detail == "Expected the base64 of 32 bytes (44 characters), found 3 bytes.")
        #expect(error(trust: #"{"keys": [{"name": "k", "ed25519": "not base64"}]}"#)?.detail?.contains("text that is not base64") == true)
        #expect(error(trust: #"{"keys": [{"name": "k", "ed25519": 7}]}"#)?.code == .manifestWrongType)
        #expect(error(trust: #"{"keys": [{"ed25519": "\#(Self.key1)"}]}"#)?.code == .manifestMissingKey)
        #expect(error(trust: #"{"keys": [{"name": "k"}]}"#)?.code == .manifestMissingKey)
        #expect(error(trust: #"{"keys": [{"name": "", "ed25519": "\#(Self.key1)"}]}"#)?.message.hasSuffix("key name is empty") == true)
        #expect(error(trust: #"{"keys": [{"name": "k", "ed25519": "\#(Self.key1)", "pem": "x"}]}"#)?.code == .manifestUnknownKey)
        #expect(error(trust: #"{"require": true}"#)?.code == .manifestUnknownKey)
        let twice = error(trust: #"{"keys": [{"name": "k", "ed25519": "\#(Self.key1)"}, {"name": "k", "ed25519": "\#(Self.key2)"}]}"#)
        #expect(twice?.message.hasSuffix("trust.keys[1]: key name \"k\" is listed twice") == true)
        let same = error(trust: #"{"keys": [{"name": "a", "ed25519": "\#(Self.key1)"}, {"name": "b", "ed25519": "\#(Self.key1)"}]}"#)
        #expect(same?.message.hasSuffix("key \(Self.key1ID) is listed twice") == true)
        let none = error(trust: #"{"requireSignatures": true, "keys": []}"#)
        #expect(none?.message.hasSuffix("trust.keys: requireSignatures is true but no key is listed") == true)
        #expect(error(trust: #"{"requireSignatures": true}"#)?.code == .manifestInvalidValue)
    }

    @Test(arguments: [
        ("rsa:21fe31dfa154a261:" + Base64Fixture.sixtyFourBytes, "Expected the algorithm \"ed25519\", found \"rsa\"."),
        ("ed25519:21FE31DFA154A261:" + Base64Fixture.sixtyFourBytes, "Expected a key id of 16 lower-case hex digits, found \"21FE31DFA154A261\"."),
        ("ed25519:21fe31df:" + Base64Fixture.sixtyFourBytes, "Expected a key id of 16 lower-case hex digits, found \"21fe31df\"."),
        ("ed25519:21fe31dfa154a261:AAAA", "Expected the base64 of a 64-byte Ed25519 signature (88 characters), found 4 characters that are not."),
        ("ed25519:21fe31dfa154a261", "Expected three parts separated by \":\" (ed25519:<key id>:<base64 signature>), found 2."),
    ])
    func malformedSignatures_areRefusedNamingThePartAndTheForm(_ text: String, _ detail: String) {
        let refused = error(plugin: #"{"name": "a", "product": "A", "signature": "\#(text)"}"#)
        #expect(refused?.code == .manifestInvalidValue)
        #expect(refused?.message.hasSuffix("plugins[0].signature: not a plugin signature") == true)
        #expect(refused?.detail == detail)
        #expect(refused?.hint?.contains("plugboard sign") == true)
    }

    @Test func theSignedMessage_isTheContextTheNameAndTheDigest_eachOnALine() {
        let digest = String(repeating: "ab", count: 32)
        #expect(PluginSignature.message(name: "FileStorage", sha256: digest.uppercased())
            == Array("plugboard plugin signature v1\nFileStorage\n\(digest)\n".utf8))
    }
}

/// 64 bytes (0 to 63) in base64: a well-formed signature that verifies for nothing.
enum Base64Fixture {
    static let sixtyFourBytes = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="
}
