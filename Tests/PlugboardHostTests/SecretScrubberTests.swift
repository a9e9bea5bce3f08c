import PlugboardAPI
@testable import PlugboardHost
import Testing

/// The scrubber hides a piece of a secret of eight characters or more where it stands as
/// a cut or quoted secret would, any secret met whole, and a short secret where it occurs
/// whole.
@Suite struct SecretScrubberTests {
    static let long = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY-0123456789abcdefgh"
    let scrubber = SecretScrubber(secrets: [Self.long, "hunter2", "abc"])

    @Test func aQuotedAndCutSecret_isHidden() {
        let quoted = PlugboardError.quoted(Self.long)
        let text = scrubber.scrub("found \(quoted) in region")
        #expect(text == "found \"<redacted>...\" in region")
        // A piece from the middle, and one of exactly eight characters.
        #expect(scrubber.scrub("x \(Self.long.dropFirst(30).prefix(20)) y") == "x <redacted> y")
        #expect(scrubber.scrub("[\(Self.long.prefix(8))]") == "[<redacted>]")
        // Seven characters are not a piece: ordinary text keeps its words.
        #expect(scrubber.scrub("[\(Self.long.prefix(7))]") == "[\(Self.long.prefix(7))]")
    }

    /// A piece of a secret that runs into other letters or digits is ordinary text that
    /// shares characters with the secret: shown as it is (issue 33: `_plugboard-s3/` came
    /// out as `_<redacted>3/` when the S3 secret began `plugboard-s`). The secret itself,
    /// cut or whole, glued to other text or not, is still hidden.
    @Test func aPieceRunningIntoOtherText_isShown_theSecretCutOrWholeIsNot() {
        let secret = "plugboard-secret-key-0123456789"
        let scrubber = SecretScrubber(secrets: [secret])
        #expect(scrubber.scrub("put of \"_plugboard-s3/buckets/photos\" refused") == "put of \"_plugboard-s3/buckets/photos\" refused")
        #expect(scrubber.scrub("key \(secret) in use") == "key <redacted> in use")
        #expect(scrubber.scrub("x\(secret)y") == "x<redacted>y")
        #expect(scrubber.scrub(PlugboardError.quoted("abc" + secret, maxCharacters: 20)) == "\"abc<redacted>...\"")
        #expect(scrubber.scrub("tail \(secret.suffix(12))") == "tail <redacted>")
        #expect(scrubber.scrub("head=\(secret.prefix(12))&next") == "head=<redacted>&next")
    }

    @Test func shortSecrets_areHiddenWhole_tinyOnesNot() {
        #expect(scrubber.scrub("password hunter2, again hunter2") == "password <redacted>, again <redacted>")
        #expect(scrubber.scrub("abc") == "abc")
        #expect(SecretScrubber.none.scrub("hunter2") == "hunter2")
    }

    @Test func errors_scrubEveryText_andTheirUnderlyingErrors() {
        struct Plain: Error, CustomStringConvertible { var description: String }
        let inner = PlugboardError(.configInvalid, "inner hunter2", detail: "d", hint: "h")
        let error = PlugboardError(.configInvalid, "bad \(PlugboardError.quoted(Self.long))", detail: "found \(Self.long)",
                                   hint: "not hunter2", underlying: inner)
        let scrubbed = scrubber.scrub(error)
        #expect(scrubbed.code == .configInvalid)
        #expect(scrubbed.message == "bad \"<redacted>...\"")
        #expect(scrubbed.detail == "found <redacted>")
        #expect(scrubbed.hint == "not <redacted>")
        #expect((scrubbed.underlying as? PlugboardError)?.message == "inner <redacted>")
        let plain = scrubber.scrub(PlugboardError(.configInvalid, "m", underlying: Plain(description: "io hunter2")))
        #expect("\(plain.underlying.map { "\($0)" } ?? "")" == "io <redacted>")
        // Nothing secret: the very same error, its underlying error kept as it was.
        let clean = scrubber.scrub(PlugboardError(.configInvalid, "m", underlying: Plain(description: "io")))
        #expect(clean.underlying is Plain)
    }

    @Test func logLines_areScrubbed_messageAndMetadata() {
        final class Lines: LogHandler, @unchecked Sendable {
            // @unchecked Sendable: the test logs from one thread.
            var lines: [String] = []
            func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
                lines.append("\(message) \(metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })")
            }
        }
        let lines = Lines()
        let logger = Logger(label: "t", handler: lines).scrubbing(scrubber)
        logger.info("connecting with hunter2", metadata: ["key": .string(String(Self.long.prefix(40))), "list": ["hunter2", "ok"]])
        #expect(lines.lines == [#"connecting with <redacted> ["key=<redacted>", "list=[<redacted>, ok]"]"#])
    }

    /// The secrets the host hides: what the configs' secret places resolve to, and the
    /// environment's secret-looking variables, whether the manifest names them or not.
    @Test func theSecrets_comeFromConfigsAndTheEnvironment() throws {
        let manifest = try ManifestTestSupport.manifest(#"""
            {"schemaVersion": 1, "plugins": [{"name": "P", "product": "MemoryStorage", "config": {
              "region": "${AWS_SECRET_ACCESS_KEY}", "token": "${PLAIN_VALUE}", "nested": {"x": {"secret": "wrap-${PLAIN_VALUE}"}}
            }}]}
            """#)
        let environment = ["AWS_SECRET_ACCESS_KEY": "aws-secret-value", "PLAIN_VALUE": "visible-value", "HOME": "/root-home",
                           "DB_PASSWORD": "db-password-value"]
        let configs = ["P": try manifest.plugins[0].resolvedConfig(environment: environment)]
        let found = SecretScrubber(plugins: manifest.plugins, configs: configs, environment: environment)
        #expect(found.secrets == ["aws-secret-value", "db-password-value", "visible-value", "wrap-visible-value"])
    }
}
