import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// Secrets: wrappers and secret-looking keys reach the plugin in clear and never appear
/// in output.
@Suite struct ManifestSecretTests {
    static let text = #"""
        {"schemaVersion": 1, "plugins": [{"name": "S3", "product": "S3Storage", "config": {
          "bucket": "photos",
          "endpoint": {"secret": "wrapped-Secret-1"},
          "DB_PASSWORD": "pw-Secret-2",
          "accessKeyId": "AKIA-Secret-3",
          "secret_access_key": "sak-Secret-4",
          "credentials": {"user": "u", "pass": "nested-Secret-5"},
          "api-key": 12345678,
          "tokenFile": null,
          "url": "postgres://admin:url-Secret-6@db:5432/app",
          "copy": "prefix pw-Secret-2 suffix",
          "list": [{"secret": "list-Secret-7"}, "plain"],
          "fromEnv": {"secret": "${S3_SECRET}"}
        }}]}
        """#

    static let secrets = ["wrapped-Secret-1", "pw-Secret-2", "AKIA-Secret-3", "sak-Secret-4", "nested-Secret-5",
                          "12345678", "url-Secret-6", "list-Secret-7", "real-env-Secret-8"]

    private func plugin() throws -> ManifestPlugin {
        try #require(try ManifestTestSupport.manifest(Self.text).plugins.first)
    }

    @Test func secretKeyRule_matchesNormalizedWords() {
        for key in ["password", "DB_PASSWORD", "passwd", "secret", "clientSecret", "secret_access_key", "accessKeyId",
                    "access-key", "apiKey", "API_KEY", "token", "authToken", "credentials", "privateKey", "private.key",
                    "Authorization", "passphrase"] {
            #expect(ConfigSecrets.isSecretKey(key), "\(key)")
        }
        for key in ["bucket", "root", "region", "endpoint", "url", "user", "keyPrefix", "port"] {
            #expect(!ConfigSecrets.isSecretKey(key), "\(key)")
        }
    }

    @Test func resolvedConfig_givesThePluginPlainStrings() throws {
        let config = try plugin().resolvedConfig(environment: ["S3_SECRET": "real-env-Secret-8"])
        #expect(try config.string("endpoint") == "wrapped-Secret-1")
        #expect(try config.string("DB_PASSWORD") == "pw-Secret-2")
        #expect(try config.string("fromEnv") == "real-env-Secret-8")
        #expect(config["list"] == .array([.string("list-Secret-7"), .string("plain")]))
        #expect(config["credentials"] == .object(["user": .string("u"), "pass": .string("nested-Secret-5")]))
    }

    @Test func redactedConfig_hidesEverySecret_andKeepsTheRestAsWritten() throws {
        let redacted = try plugin().redactedConfig
        guard case .object(let o) = redacted else {
            Issue.record("expected an object")
            return
        }
        #expect(o["bucket"] == .string("photos"))
        #expect(o["endpoint"] == .string("<redacted>"))
        #expect(o["DB_PASSWORD"] == .string("<redacted>"))
        #expect(o["accessKeyId"] == .string("<redacted>"))
        #expect(o["secret_access_key"] == .string("<redacted>"))
        #expect(o["credentials"] == .string("<redacted>"))
        #expect(o["api-key"] == .string("<redacted>"))
        #expect(o["tokenFile"] == .null)
        #expect(o["url"] == .string("postgres://admin:<redacted>@db:5432/app"))
        #expect(o["copy"] == .string("prefix <redacted> suffix"))
        #expect(o["list"] == .array([.string("<redacted>"), .string("plain")]))
        #expect(o["fromEnv"] == .string("<redacted>"))
        let text = redacted.description
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret)") }
    }

    @Test func printingThePluginOrManifest_neverShowsASecret() throws {
        let manifest = try ManifestTestSupport.manifest(Self.text)
        let p = try plugin()
        var dumped = ""
        dump(p, to: &dumped)
        var dumpedManifest = ""
        dump(manifest, to: &dumpedManifest)
        let outputs = [String(describing: p), String(reflecting: p), "\(p)", p.debugDescription, dumped,
                       String(describing: manifest), dumpedManifest, String(describing: [p])]
        for output in outputs {
            #expect(output.contains("<redacted>"))
            for secret in Self.secrets { #expect(!output.contains(secret), "\(secret) in \(output)") }
        }
    }

    @Test func errorsNeverQuoteSecretValues() {
        let text = #"{"schemaVersion": 1, "plugins": [{"name": "p", "product": "P", "config": {"password": "x${oops-Secret-9"}}]}"#
        let error = ManifestTestSupport.manifestError(text)
        #expect(error?.code == .manifestInvalidValue)
        #expect(error?.description.contains("oops-Secret-9") == false)
    }

    @Test func syntaxErrorsInSecretValues_doNotQuoteThem() {
        let cases = [#"{"password": hunter2x}"#, #"{"token": 0123456}"#, #"{"apiKey": "ab\qcdsecret"}"#,
                     #"{"x": {"secret": "\u12zzsecret"}}"#, #"{"credentials": [1e999]}"#]
        for text in cases {
            let error = ManifestTestSupport.jsonError(text)
            #expect(error?.code == .manifestSyntax, "\(text)")
            for fragment in ["hunter2x", "0123456", "qcdsecret", "zzsecret", "1e999"] {
                #expect(error?.description.contains(fragment) == false, "\(error?.description ?? "")")
            }
        }
        // Outside secrets, the found text is quoted.
        #expect(ManifestTestSupport.jsonError(#"{"bucket": hunter2x}"#)?.message.contains("'hunter2x'") == true)
    }
}
