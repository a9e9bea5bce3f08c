import PlugboardAPI
@testable import PlugboardHost
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
        #expect(pairs == [S3KeyPair(accessKeyID: "plugboard-admin", secretAccessKey: Self.secret),
                          S3KeyPair(accessKeyID: "from-env", secretAccessKey: Self.envSecret),
                          S3KeyPair(accessKeyID: "lit${x}", secretAccessKey: "default-secret")])
        #expect(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}]}"#).s3?.credentialCount == 1)
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

    /// Each refusal: its code, the JSON path, what was expected and found, a hint.
    @Test(arguments: [
        (#"true"#, "manifest.wrong_type", "s3: expected an object, found a boolean"),
        (#"{}"#, "manifest.missing_key", #"missing key "credentials" in s3"#),
        (#"{"credentials": [], "x": 1}"#, "manifest.invalid_value", "s3.credentials: expected at least one key pair, found none"),
        (#"{"credential": []}"#, "manifest.unknown_key", #"unknown key "credential" in s3"#),
        (#"{"credentials": {}}"#, "manifest.wrong_type", "s3.credentials: expected an array, found an object"),
        (#"{"credentials": ["k"]}"#, "manifest.wrong_type", "s3.credentials[0]: expected an object, found a string"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678", "region": "x"}]}"#, "manifest.unknown_key", #"unknown key "region" in s3.credentials[0]"#),
        (#"{"credentials": [{"accesKeyId": "abc"}]}"#, "manifest.unknown_key", #"unknown key "accesKeyId" in s3.credentials[0]"#),
        (#"{"credentials": [{"secretAccessKey": "12345678"}]}"#, "manifest.missing_key", #"missing key "accessKeyId" in s3.credentials[0]"#),
        (#"{"credentials": [{"accessKeyId": "abc"}]}"#, "manifest.missing_key", #"missing key "secretAccessKey" in s3.credentials[0]"#),
        (#"{"credentials": [{"accessKeyId": 7, "secretAccessKey": "12345678"}]}"#, "manifest.wrong_type", "s3.credentials[0].accessKeyId: expected a string, found an integer"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": 12345678}]}"#, "manifest.wrong_type", #"s3.credentials[0].secretAccessKey: expected a string or {"secret": "..."}, found an integer"#),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": {"secret": 1}}]}"#, "manifest.wrong_type", "s3.credentials[0].secretAccessKey.secret: expected a string, found an integer"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": {"secret": "12345678", "x": 1}}]}"#, "manifest.wrong_type", "s3.credentials[0].secretAccessKey: expected a string or"),
        (#"{"credentials": [{"accessKeyId": "ab", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: expected an access key ID of 3 to 128 characters, found 2 characters"),
        (#"{"credentials": [{"accessKeyId": "a b c", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: expected an access key ID of printable ASCII without spaces or \"/\", found a space at character 2"),
        (#"{"credentials": [{"accessKeyId": "ab/c", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "found a \"/\" at character 3"),
        (#"{"credentials": [{"accessKeyId": "abcé", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "found a character that is not printable ASCII at character 4"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "1234567"}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey: expected a secret access key of 8 to 256 characters, found 7 characters"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": {"secret": "short"}}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey.secret: expected a secret access key of 8 to 256 characters, found 5 characters"),
        (#"{"credentials": [{"accessKeyId": "${BAD", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: malformed variable reference"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "${1x}"}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey: malformed variable reference"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}, {"accessKeyId": "abc", "secretAccessKey": "87654321"}]}"#, "manifest.invalid_value", "s3.credentials[1].accessKeyId: expected a unique access key ID, found the one of s3.credentials[0] again"),
    ])
    func refusal_namesPathExpectedFound(_ s3: String, _ code: String, _ text: String) throws {
        let e = try #require(error(s3))
        #expect(e.code.rawValue == code, "\(e)")
        #expect(e.message.hasPrefix("plugins.json:1:"), "\(e.message)")
        #expect(e.message.contains(text), "\(e.message)")
        #expect(e.hint?.isEmpty == false, "\(e)")
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

    /// Values with `${...}` are checked once expanded, by serve; the messages say so.
    @Test func expandedValues_areCheckedWhenResolved() throws {
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "${ID}", "secretAccessKey": {"secret": "${SECRET}"}}, {"accessKeyId": "${ID2:-same}", "secretAccessKey": "12345678"}]}"#).s3)
        func refusal(_ env: [String: String]) -> PlugboardError? {
            do { _ = try s3.resolvedCredentials(environment: env); return nil } catch { return error }
        }
        let missing = try #require(refusal(["SECRET": Self.secret]))
        #expect(missing.code == .manifestMissingVariable)
        #expect(missing.message.contains(#"environment variable "ID" is not set, needed by s3.credentials[0].accessKeyId"#), "\(missing.message)")
        let short = try #require(refusal(["ID": "abc", "SECRET": "wJalr"]))
        #expect(short.code == .manifestInvalidValue)
        #expect(short.message.contains("s3.credentials[0].secretAccessKey.secret: expected a secret access key of 8 to 256 characters, found 5 characters once its variables are expanded"), "\(short.message)")
        let badId = try #require(refusal(["ID": "a b", "SECRET": Self.secret]))
        #expect(badId.message.contains("found a space at character 2 once its variables are expanded"), "\(badId.message)")
        let duplicate = try #require(refusal(["ID": "same", "SECRET": Self.secret]))
        #expect(duplicate.message.contains("s3.credentials[1].accessKeyId: expected a unique access key ID"), "\(duplicate.message)")
        #expect(refusal(["ID": "other", "SECRET": Self.secret]) == nil)
    }

    /// The error of a bad pair and the rendered manifest never hold the secret.
    @Test func secret_neverInAnErrorOrADescription() throws {
        let tooLong = String(repeating: "S3cr3t-", count: 40)   // 280 characters
        for s3 in [#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "\#(tooLong)"}]}"#,
                   #"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": {"secret": "\#(tooLong)"}}]}"#,
                   #"{"credentials": [{"accessKeyId": "a b", "secretAccessKey": "\#(Self.secret)"}]}"#,
                   #"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "\#(Self.secret)"}, {"accessKeyId": "abc", "secretAccessKey": "\#(Self.secret)"}]}"#,
                   #"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "\#(Self.secret)", "extra": "\#(Self.secret)x"}]}"#] {
            let e = try #require(error(s3))
            let text = [e.message, e.detail ?? "", e.hint ?? "", e.description, String(reflecting: e)].joined(separator: "\n")
            #expect(!text.contains("S3cr3t-S3cr3t"), "\(text)")
            #expect(!text.contains("wJalrXUt"), "\(text)")
        }
        // Expanded: the same from resolvedCredentials.
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "${S}"}]}"#).s3)
        do {
            _ = try s3.resolvedCredentials(environment: ["S": tooLong])
            Issue.record("a 280-character secret was accepted")
        } catch {
            let text = [error.message, error.detail ?? "", error.hint ?? "", error.description].joined(separator: "\n")
            #expect(text.contains("found 280 characters"), "\(text)")
            #expect(!text.contains("S3cr3t-S3cr3t"), "\(text)")
        }
        let m = try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "\#(Self.secret)"}]}"#)
        var dumped = ""
        dump(m, to: &dumped)
        #expect(!m.description.contains("wJalrXUt") && !dumped.contains("wJalrXUt"))
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
