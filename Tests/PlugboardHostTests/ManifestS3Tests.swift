import PlugboardAPI
@testable import PlugboardHost
import PlugboardJSON
import Testing

/// The manifest's `s3` object: the S3 API's key pairs, read by the strict decoder, their
/// secrets never shown.
@Suite struct ManifestS3Tests {
    static let secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"
    static let envSecret = "env-Secret-Access-Key-42"

    private func manifest(_ s3: String) throws(PlugboardError) -> Manifest {
        try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [], "s3": "# + s3 + "}", path: "plugins.json")
    }

    private func error(_ s3: String) -> PlugboardError? {
        ManifestTestSupport.manifestError(#"{"schemaVersion": 1, "plugins": [], "s3": "# + s3 + "}")
    }

    @Test func pairs_plainAndWrapped_resolveWithVariables() throws {
        let m = try manifest(#"{"credentials": [{"accessKeyId": "plugboard-admin", "secretAccessKey": "\#(Self.secret)"}, {"accessKeyId": "${S3_KEY_ID}", "secretAccessKey": {"secret": "${S3_SECRET}"}}, {"accessKeyId": "lit$${x}", "secretAccessKey": "${MISSING:-default-secret}"}]}"#)
        let s3 = try #require(m.s3)
        #expect(s3.credentialCount == 3)
        let pairs = try s3.resolvedCredentials(environment: ["S3_KEY_ID": "from-env", "S3_SECRET": Self.envSecret])
        #expect(pairs == [S3Credential(accessKeyID: "plugboard-admin", secretAccessKey: Self.secret),
                          S3Credential(accessKeyID: "from-env", secretAccessKey: Self.envSecret),
                          S3Credential(accessKeyID: "lit${x}", secretAccessKey: "default-secret")])
        #expect(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}]}"#).s3?.credentialCount == 1)
    }

    @Test func signatureV2_isOffByDefault_andMayStandWithoutPairs() throws {
        #expect(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}]}"#).s3?.signatureV2 == false)
        let on = try #require(try manifest(#"{"signatureV2": true, "credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}]}"#).s3)
        #expect(on.signatureV2 && on.credentialCount == 1)
        #expect("\(on)" == "s3: 1 credential, signature V2")
        // The pair may come from the environment alone (PLUGBOARD_S3_ACCESS_KEY_ID).
        let alone = try #require(try manifest(#"{"signatureV2": true}"#).s3)
        #expect(alone.signatureV2 && alone.credentialCount == 0)
        #expect(try #require(error(#"{"signatureV2": "yes"}"#)).code == .manifestWrongType)
        #expect(try #require(error(#"{"signatureV2": true, "credentials": []}"#)).code == .manifestInvalidValue)
        #expect(try #require(error(#"{"signaturev2": true}"#)).hint == #"Did you mean "signatureV2"?"#)
    }

    @Test func absent_isNil() throws {
        #expect(try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": []}"#).s3 == nil)
    }

    @Test func descriptionAndDump_showTheCount_neverASecret() throws {
        let m = try manifest(#"{"credentials": [{"accessKeyId": "plugboard-admin", "secretAccessKey": "\#(Self.secret)"}, {"accessKeyId": "second", "secretAccessKey": {"secret": "\#(Self.secret)-2"}}]}"#)
        #expect(m.description.contains("  s3: 2 credentials"))
        var dumped = ""
        dump(m, to: &dumped)
        let pairs = try #require(try m.s3?.resolvedCredentials(environment: [:]))
        for text in [m.description, String(reflecting: m), dumped, "\(m.s3!)", "\(pairs)", String(reflecting: pairs)] {
            #expect(!text.contains(Self.secret), "\(text)")
            #expect(!text.contains("wJalrXUt"), "\(text)")
        }
        #expect("\(pairs[0])".contains("plugboard-admin"))
        #expect(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}]}"#).description.hasSuffix("\n  s3: 1 credential"))
    }

    @Test func unknownKey_suggestsTheClosest() throws {
        #expect(try #require(error(#"{"credentails": []}"#)).hint == #"Did you mean "credentials"?"#)
        #expect(try #require(error(#"{"credentials": [{"secretAccesKey": "x"}]}"#)).hint == #"Did you mean "secretAccessKey"?"#)
        let top = try #require(ManifestTestSupport.manifestError(#"{"schemaVersion": 1, "plugins": [], "s4": {}}"#))
        #expect(top.hint == #"Did you mean "s3"?"#)
        #expect(top.detail?.contains("s3") == true)
    }

    @Test func tooManyPairs_areRefused() throws {
        let pairs = (0..<101).map { #"{"accessKeyId": "key\#($0)", "secretAccessKey": "12345678"}"# }
        let e = try #require(error(#"{"credentials": [\#(pairs.joined(separator: ","))]}"#))
        #expect(e.message.contains("s3.credentials: expected at most 100 key pairs, found 101"), "\(e.message)")
        #expect(try manifest(#"{"credentials": [\#(pairs.dropLast().joined(separator: ","))]}"#).s3?.credentialCount == 100)
    }

    /// The host knows the resolved secrets, so what a plugin hands back is scrubbed of them.
    @Test func scrubber_hidesTheManifestsSecrets() throws {
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "\#(Self.secret)"}, {"accessKeyId": "def", "secretAccessKey": {"secret": "${S3_SECRET}"}}, {"accessKeyId": "ghi", "secretAccessKey": "${UNSET}"}]}"#).s3)
        let known = s3.knownSecrets(environment: ["S3_SECRET": Self.envSecret])
        #expect(Set(known) == [Self.secret, Self.envSecret])
        let scrubber = SecretScrubber(plugins: [], configs: [:], environment: [:], extra: known)
        let said = scrubber.scrub("bad region \"\(Self.secret)\" and \(Self.envSecret.prefix(12))")
        #expect(!said.contains("wJalrXUt") && !said.contains("env-Secret-A"), "\(said)")
        #expect(said.contains(ConfigSecrets.marker))
    }
}
