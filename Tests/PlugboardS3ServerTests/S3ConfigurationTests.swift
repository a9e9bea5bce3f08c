import PlugboardAPI
import PlugboardHost
@testable import PlugboardS3Server
import Testing

/// The S3 front end's configuration: the rules its key pairs keep, wherever they were
/// written (the manifest's `s3` section, read by PlugboardHost, or the environment), checked
/// once by `S3Router.Configuration.validate()`; the secrets never shown.
@Suite struct S3ConfigurationTests {
    static let secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"

    private func manifest(_ s3: String) throws(PlugboardError) -> Manifest {
        try Manifest.parse(bytes: Array((#"{"schemaVersion": 1, "plugins": [], "s3": "# + s3 + "}").utf8), path: "plugins.json")
    }

    /// The first refusal of the section: the manifest's reading, then the configuration's rules.
    private func error(_ s3: String) -> PlugboardError? {
        do {
            guard let settings = try manifest(s3).s3 else { return nil }
            _ = try Self.resolved(settings, environment: [:])
            return nil
        } catch {
            return error
        }
    }

    /// The pairs `serve` would serve with: expanded, then checked.
    static func resolved(_ s3: S3Settings, environment: [String: String]) throws(PlugboardError) -> [S3Credential] {
        let configuration = S3Router.Configuration(credentials: try s3.resolvedCredentials(environment: environment))
        try configuration.validate()
        return configuration.effectiveCredentials
    }

    /// Each refusal of the section, in the order `serve` meets them (the manifest's reading
    /// of its shape, then the configuration's rules): its code, the JSON path, what was
    /// expected and found, a hint.
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
        (#"{"credentials": [{"accessKeyId": "${BAD", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: malformed variable reference"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "${1x}"}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey: malformed variable reference"),
        (#"{"credentials": [{"accessKeyId": "ab", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: expected an access key ID of 3 to 128 characters, found 2 characters"),
        (#"{"credentials": [{"accessKeyId": "a b c", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "s3.credentials[0].accessKeyId: expected an access key ID of printable ASCII without spaces or \"/\", found a space at character 2"),
        (#"{"credentials": [{"accessKeyId": "ab/c", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "found a \"/\" at character 3"),
        (#"{"credentials": [{"accessKeyId": "abcé", "secretAccessKey": "12345678"}]}"#, "manifest.invalid_value", "found a character that is not printable ASCII at character 4"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "1234567"}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey: expected a secret access key of 8 to 256 characters, found 7 characters"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": {"secret": "short"}}]}"#, "manifest.invalid_value", "s3.credentials[0].secretAccessKey.secret: expected a secret access key of 8 to 256 characters, found 5 characters"),
        (#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}, {"accessKeyId": "abc", "secretAccessKey": "87654321"}]}"#, "manifest.invalid_value", "s3.credentials[1].accessKeyId: expected a unique access key ID, found the one of s3.credentials[0] again"),
    ])
    func refusal_namesPathExpectedFound(_ s3: String, _ code: String, _ text: String) throws {
        let e = try #require(error(s3))
        #expect(e.code.rawValue == code, "\(e)")
        #expect(e.message.hasPrefix("plugins.json:1:"), "\(e.message)")
        #expect(e.message.contains(text), "\(e.message)")
        #expect(e.hint?.isEmpty == false, "\(e)")
    }

    /// Values with `${...}` are checked once expanded; the messages say so.
    @Test func expandedValues_areCheckedWhenResolved() throws {
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "${ID}", "secretAccessKey": {"secret": "${SECRET}"}}, {"accessKeyId": "${ID2:-same}", "secretAccessKey": "12345678"}]}"#).s3)
        func refusal(_ env: [String: String]) -> PlugboardError? {
            do { _ = try Self.resolved(s3, environment: env); return nil } catch { return error }
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
        // Expanded: the same once resolved and checked.
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "${S}"}]}"#).s3)
        do {
            _ = try Self.resolved(s3, environment: ["S": tooLong])
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

    /// The environment's pair replaces a manifest pair with its ID; its secret is held to
    /// the same rule, and refused naming the variable.
    @Test func environmentPair_replacesTheManifestsPairWithItsID() throws {
        let origin = S3Credential.Origin.environment(accessKeyIDVariable: "PLUGBOARD_S3_ACCESS_KEY_ID", secretVariable: "PLUGBOARD_S3_SECRET_ACCESS_KEY")
        let s3 = try #require(try manifest(#"{"credentials": [{"accessKeyId": "abc", "secretAccessKey": "12345678"}, {"accessKeyId": "def", "secretAccessKey": "87654321"}]}"#).s3)
        var configuration = S3Router.Configuration(credentials: try s3.resolvedCredentials(environment: [:]))
        configuration.credentials.append(S3Credential(accessKeyID: "abc", secretAccessKey: Self.secret, origin: origin))
        try configuration.validate()
        #expect(configuration.effectiveCredentials == [S3Credential(accessKeyID: "def", secretAccessKey: "87654321"),
                                                       S3Credential(accessKeyID: "abc", secretAccessKey: Self.secret)])
        configuration.credentials[2] = S3Credential(accessKeyID: "abc", secretAccessKey: "five5", origin: origin)
        do {
            try configuration.validate()
            Issue.record("a 5-character secret was accepted")
        } catch {
            #expect(error.code == .serveWeakCredential)
            #expect(error.message.hasPrefix("refusing to serve with PLUGBOARD_S3_SECRET_ACCESS_KEY as it is: "), "\(error.message)")
            #expect(!error.message.contains("five5"))
        }
    }

    /// No pair anywhere: refused, naming the listen address, the manifest and the variables.
    @Test func noPair_isRefused_namingWhereOneCouldCome() {
        let configuration = S3Router.Configuration(credentials: [], sources: .init(listen: "127.0.0.1:9000", manifestPath: "/srv/plugins.json",
                                                                                  unsetVariables: ["PLUGBOARD_S3_SECRET_ACCESS_KEY"]))
        do {
            try configuration.validate()
            Issue.record("a configuration without a pair was accepted")
        } catch {
            #expect(error.code == .serveUnprotected)
            #expect(error.detail?.contains("--s3-listen 127.0.0.1:9000 was given") == true, "\(error)")
            #expect(error.detail?.contains("PLUGBOARD_S3_SECRET_ACCESS_KEY is not set") == true, "\(error)")
        }
    }

    /// The region and the domain: what addressing and signatures can work with.
    @Test func regionAndDomain_areChecked() {
        func code(region: String = "us-east-1", domain: String? = nil) -> String? {
            do {
                try S3Router.Configuration(credentials: [], region: region, domain: domain).validateAddressing()
                return nil
            } catch {
                return error.code.rawValue
            }
        }
        #expect(code() == nil)
        #expect(code(region: "eu-west-3", domain: "s3.example.test") == nil)
        for region in ["", "us east", String(repeating: "a", count: 65), "us_east"] { #expect(code(region: region) == "cli.usage", "\(region)") }
        for domain in ["", ".example.test", "s3.example.test:9000", "a/b"] { #expect(code(domain: domain) == "cli.usage", "\(domain)") }
    }
}
