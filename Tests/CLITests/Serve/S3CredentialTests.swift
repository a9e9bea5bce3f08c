#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `serve --s3-listen` with its key pairs from the manifest's `s3` object, and its refusal
/// when neither the manifest nor the environment holds one.
@Suite(.serialized) struct S3CredentialTests {
    static let secret = "manifest-Secret-Key-0123456789"
    /// Without the environment's pair, whatever the test runner has.
    static let noEnvironmentPair = ["PLUGBOARD_S3_ACCESS_KEY_ID": "", "PLUGBOARD_S3_SECRET_ACCESS_KEY": ""]

    static func manifest(s3: String?) -> String {
        var text = ManifestText.make([ManifestText.memory])
        if let s3 {
            text = String(text.dropLast(2)) + ",\n  \"s3\": \(s3)\n}\n"
        }
        return text
    }

    @Test func manifestPair_servesTheS3API_andRefusesUnsignedRequests() throws {
        let s3 = #"{"credentials": [{"accessKeyId": "plugboard-test", "secretAccessKey": {"secret": "${TEST_S3_SECRET}"}}]}"#
        var environment = Self.noEnvironmentPair
        environment["TEST_S3_SECRET"] = Self.secret
        let server = try ServerProcess(manifest: Self.manifest(s3: s3), arguments: ["--s3-listen", "127.0.0.1:0", "--log-level", "notice"],
                                       environment: environment, laterLines: 1)
        let line = try #require(server.laterLines.first)
        let prefix = "plugboard serve: S3 API listening on http://127.0.0.1:"
        #expect(line.hasPrefix(prefix), "\(line)")
        let port = try #require(Int(line.dropFirst(prefix.count)))
        #expect(port != server.port)
        let response = try RawClient(port: port).request("GET", "/")
        #expect(response.status == 403)
        #expect(response.text.contains("<Code>AccessDenied</Code>"), "\(response.text)")
        #expect(server.stop() == 0)
        #expect(!server.stderr.contains(Self.secret))
        // The native API beside it has no token: said at start.
        #expect(server.stderr.contains("without PLUGBOARD_API_TOKEN the native API on 127.0.0.1:"), "\(server.stderr)")
        // Whether other gateways may share the backend (issue 32): also said at start.
        #expect(server.stderr.contains("S3 gateways sharing the backend: MemoryStorage is this process's memory: no other gateway can share it"),
                "\(server.stderr)")
    }

    /// A header-form request with a bogus signature: the error tells whether the server
    /// knows the access key ID (InvalidAccessKeyId when it does not) without signing.
    static func errorCode(port: Int, accessKeyID: String) throws -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y%m%dT%H%M%SZ", &parts)
        let amzDate = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let authorization = "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(amzDate.prefix(8))/us-east-1/s3/aws4_request, "
            + "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + String(repeating: "0", count: 64)
        let response = try RawClient(port: port).request("GET", "/", headers: [
            ("Authorization", authorization), ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), ("x-amz-date", amzDate)])
        guard let start = response.text.firstRange(of: "<Code>"), let end = response.text.firstRange(of: "</Code>") else { return "" }
        return String(response.text[start.upperBound..<end.lowerBound])
    }

    @Test func manifestPairsAndTheEnvironmentPair_areAllKnown() throws {
        let s3 = #"{"credentials": [{"accessKeyId": "manifest-one", "secretAccessKey": "one-Secret-Key"}, {"accessKeyId": "manifest-two", "secretAccessKey": {"secret": "two-Secret-Key"}}]}"#
        let server = try ServerProcess(manifest: Self.manifest(s3: s3), arguments: ["--s3-listen", "127.0.0.1:0"],
                                       environment: ["PLUGBOARD_S3_ACCESS_KEY_ID": "env-key", "PLUGBOARD_S3_SECRET_ACCESS_KEY": "env-Secret-Key"],
                                       laterLines: 1)
        let line = try #require(server.laterLines.first)
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        for known in ["manifest-one", "manifest-two", "env-key"] {
            let code = try Self.errorCode(port: port, accessKeyID: known)
            #expect(!code.isEmpty && code != "InvalidAccessKeyId", "\(known): \(code)")
        }
        #expect(try Self.errorCode(port: port, accessKeyID: "stranger") == "InvalidAccessKeyId")
        #expect(server.stop() == 0)
        for secret in ["one-Secret-Key", "two-Secret-Key", "env-Secret-Key"] { #expect(!server.stderr.contains(secret)) }
    }

    /// The S3 options are checked before anything starts: each refusal is a usage error
    /// (exit 2) naming the option, what was found and what it expects.
    @Test(arguments: [
        (["--s3-region", "us-east-1"], "--s3-region without --s3-listen"),
        (["--s3-domain", "s3.example.test"], "--s3-domain without --s3-listen"),
        (["--s3-listen", "127.0.0.1:0", "--s3-region", "us east"], "invalid --s3-region \"us east\""),
        (["--s3-listen", "127.0.0.1:0", "--s3-domain", "s3.example.test:9000"], "invalid --s3-domain \"s3.example.test:9000\""),
        (["--s3-listen", "127.0.0.1:0", "--s3-domain", ".example.test"], "invalid --s3-domain \".example.test\""),
        (["--s3-listen", "9000"], "invalid --s3-listen \"9000\""),
        (["--listen", "127.0.0.1:18080", "--s3-listen", "127.0.0.1:18080"], "--s3-listen 127.0.0.1:18080 is the address --listen already uses"),
    ])
    func s3OptionsThatCannotWork_exit2_namingTheOption(arguments: [String], message: String) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", Self.manifest(s3: nil))
        let listen = arguments.contains("--listen") ? [] : ["--listen", "127.0.0.1:0"]
        let result = await sandbox.run(["serve"] + listen + arguments,
                                 environment: ["PLUGBOARD_S3_ACCESS_KEY_ID": "k", "PLUGBOARD_S3_SECRET_ACCESS_KEY": "a-Secret-Key-0123"])
        expectRun(result, status: 2, stdout: .empty, stderr: .contains(message))
    }

    @Test func aShortSecretInTheEnvironment_exits2_asTheManifestsWould() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", Self.manifest(s3: nil))
        let result = await sandbox.run(["serve", "--listen", "127.0.0.1:0", "--s3-listen", "0.0.0.0:0"],
                                       environment: ["PLUGBOARD_S3_ACCESS_KEY_ID": "key-id", "PLUGBOARD_S3_SECRET_ACCESS_KEY": "five5",
                                                     "PLUGBOARD_ADMIN_TOKEN": "admin-token-long"])
        expectRun(result, status: 2, stdout: .empty,
                  stderr: .contains("refusing to serve with PLUGBOARD_S3_SECRET_ACCESS_KEY", "expected a secret access key of 8 to 256 characters, found 5 characters"))
        #expect(!result.stderr.contains("five5"))
    }

    @Test func noPairAnywhere_exits2_namingBothWays() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", Self.manifest(s3: nil))
        let arguments = ["serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0"]
        expectRun(await sandbox.run(arguments, environment: Self.noEnvironmentPair), status: 2, stdout: .empty,
                  stderr: .contains("refusing to serve the S3 API without credentials",
                                    "\"s3\": {\"credentials\"", "PLUGBOARD_S3_ACCESS_KEY_ID", "PLUGBOARD_S3_SECRET_ACCESS_KEY"))
        expectRun(await sandbox.run(arguments + ["--json"], environment: Self.noEnvironmentPair), status: 2,
                  stdout: .contains("serve.unprotected_listen"))
    }

    @Test func manifestPairWithAnUnsetVariable_exits2() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", Self.manifest(s3: #"{"credentials": [{"accessKeyId": "plugboard-test", "secretAccessKey": "${TEST_S3_UNSET}"}]}"#))
        var environment = Self.noEnvironmentPair
        environment["TEST_S3_UNSET"] = nil
        let arguments = ["serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0"]
        expectRun(await sandbox.run(arguments, environment: environment), status: 2, stdout: .empty,
                  stderr: .contains("TEST_S3_UNSET", "s3.credentials[0].secretAccessKey"))
        expectRun(await sandbox.run(arguments + ["--json"], environment: environment), status: 2,
                  stdout: .contains("manifest.missing_variable"))
        // Without --s3-listen the section is not resolved: check is content.
        expectRun(await sandbox.run(["check"], environment: environment), status: 0)
    }
}

/// The `s3` pairs a manifest writes out in full are the S3 API's rules, which its module
/// holds, yet refused whenever the manifest is read: `check`, not only `serve --s3-listen`.
@Suite struct S3WrittenCredentialTests {
    @Test(arguments: [
        (#"{"accessKeyId": "ab", "secretAccessKey": "a-Long-Enough-Secret"}"#, "s3.credentials[0].accessKeyId"),
        (#"{"accessKeyId": "plugboard-test", "secretAccessKey": "short"}"#, "s3.credentials[0].secretAccessKey"),
    ])
    func aWrittenPairThatBreaksTheRules_isRefusedByCheck(pair: String, path: String) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", S3CredentialTests.manifest(s3: #"{"credentials": [\#(pair)]}"#))
        let run = await sandbox.run(["check", "--json"])
        #expect(run.status == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("manifest.invalid_value"), "\(run.stdout)")
        #expect(run.stdout.contains(path), "\(run.stdout)")
        #expect(!run.stdout.contains("a-Long-Enough-Secret") && !run.stderr.contains("a-Long-Enough-Secret"))
    }

    @Test func aPairNamingVariables_waitsForServe() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let s3 = #"{"credentials": [{"accessKeyId": "plugboard-test", "secretAccessKey": {"secret": "${TEST_S3_SECRET}"}}]}"#
        try sandbox.write("plugins.json", S3CredentialTests.manifest(s3: s3))
        let run = await sandbox.run(["check", "--json"], environment: ["TEST_S3_SECRET": "x"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    }
}
