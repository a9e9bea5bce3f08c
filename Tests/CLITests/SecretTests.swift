import PlugboardHost
import Testing

/// A secret in a plugin's config never reaches standard output or standard error, in any
/// command, in text or JSON, at any log level, whether the plugin loads or fails.
@Suite struct SecretTests {
    static let secret = "hunter2"

    @Test func secretsAreNeverPrinted() async throws {
        let library = try await FolderStorageFixture.path()
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.makeFolder("objects")
        try sandbox.write("plugins.json", ManifestText.make([
            // Loads: FolderStorage ignores keys it does not use.
            #"{"name": "Folder", "path": "\#(library)", "config": {"root": "\#(sandbox.path("objects"))", "token": {"secret": "hunter2"}, "password": "hunter2", "url": "https://u:${DB_PASSWORD}@db/x"}}"#,
            // Fails: MemoryStorage refuses the unknown key, and a wrong type.
            #"{"name": "Mem", "product": "MemoryStorage", "config": {"apiKey": {"secret": "hunter2"}}}"#,
            #"{"name": "Mem2", "product": "MemoryStorage", "config": {"seed": {"secret": "${SEED_SECRET}"}}}"#,
            // Rejected before loading.
            #"{"name": "Gone", "path": "nowhere/libGone.so", "config": {"secret": "hunter2"}}"#,
            // Skipped: never expanded.
            #"{"name": "Prod", "product": "MemoryStorage", "environments": ["production"], "config": {"token": "${UNSET_TOKEN}"}}"#,
        ]))
        let environment = ["DB_PASSWORD": Self.secret, "SEED_SECRET": Self.secret]
        var runs: [CommandResult] = []
        for command in [["check"], ["plugins"], ["services"], ["graph"], ["graph", "--format", "json"],
                        ["storage", "list"], ["storage", "put", "k"], ["storage", "head", "k"]] {
            for extra in [[], ["--json"], ["--log-level", "trace"], ["--json", "--log-level", "trace"],
                          ["--log-format", "json", "--log-level", "trace"]] {
                runs.append(await sandbox.run(command + extra, stdin: Array("v".utf8), environment: environment))
            }
        }
        for run in runs {
            #expect(!run.allOutput.contains(Self.secret), "\(run)")
            #expect(!run.timedOut && run.status <= 1, "\(run)")
        }
        // The failures are reported, just without the secret.
        let check = try #require(runs.first)
        expectRun(check, status: 1, stdout: .contains("Folder", "active", "Mem", "config.apiKey", "Gone", "rejected"))

        // In production, the unset ${UNSET_TOKEN} is a manifest error that names the
        // variable, not a value.
        let production = await sandbox.run(["check", "--env", "production", "--json"], environment: environment)
        expectRun(production, status: 2, stdout: .contains("manifest.missing_variable", "UNSET_TOKEN"))
        #expect(!production.allOutput.contains(Self.secret))
    }

    /// A 100-character sentinel, longer than the 80 characters at which quoting cuts.
    static let longSecret = "pbSentinel7Qx" + String(repeating: "Kw3Zr9Ty", count: 10) + "Ld5Mv8H"

    /// Every eight-character slice of `secret` that `text` contains.
    static func slices(of secret: String, in text: String) -> [String] {
        let chars = Array(secret)
        return (0...(chars.count - 8)).map { String(chars[$0..<($0 + 8)]) }.filter { text.contains($0) }
    }

    /// `${AWS_SECRET_ACCESS_KEY}` written in S3Storage's `region` by mistake: the plugin
    /// quotes the value it refuses (cut at 80 characters). No piece of it reaches the
    /// output of check (in a preflight child or in process), plugins --json, the server's
    /// /v1/admin/plugins, or any log line.
    @Test func aSecretInAFieldThePluginValidates_isNeverEchoed() async throws {
        let secret = Self.longSecret
        #expect(secret.count == 100)
        let plugin = #"{"name": "S3", "product": "S3Storage", "config": {"bucket": "photos", "endpoint": "http://127.0.0.1:9", "region": "${AWS_SECRET_ACCESS_KEY}"}}"#
        let environment = ["AWS_ACCESS_KEY_ID": "AKIDSENTINEL", "AWS_SECRET_ACCESS_KEY": secret]
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([plugin]))
        for command in [["check"], ["check", "--in-process"], ["plugins"]] {
            for extra in [["--json"], ["--json", "--log-level", "trace"], ["--log-level", "trace"]] {
                let run = await sandbox.run(command + extra, environment: environment)
                // The plugin fails, and says where: only the value is hidden.
                #expect(run.stdout.contains("plugin.config_invalid") || run.stdout.contains("failed"), "\(run)")
                #expect(Self.slices(of: secret, in: run.allOutput).isEmpty, "\(run)")
            }
        }
        let json = await sandbox.run(["check", "--json"], environment: environment)
        #expect(json.stdout.contains("region") && json.stdout.contains("<redacted>"), "\(json)")

        let server = try ServerProcess(plugins: [plugin], arguments: ["--log-level", "trace"], environment: environment)
        let admin = try server.client().request("GET", "/v1/admin/plugins")
        #expect(admin.status == 200)
        #expect(admin.text.contains("plugin.config_invalid"), "\(admin.text)")
        #expect(Self.slices(of: secret, in: admin.text).isEmpty, "\(admin.text)")
        #expect(Self.slices(of: secret, in: server.stderr).isEmpty, "\(server.stderr)")
    }

    @Test func secretsInAnInvalidManifest_areNotQuoted() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // A syntax error inside the value of a secret-looking key.
        try sandbox.write("plugins.json", """
            {"schemaVersion": 1, "plugins": [
              {"name": "Mem", "product": "MemoryStorage", "config": {"password": "hunter2\u{01}"}}
            ]}
            """)
        for extra in [[], ["--json"]] {
            let result = await sandbox.run(["check"] + extra)
            expectRun(result, status: 2)
            #expect(!result.allOutput.contains(Self.secret), "\(result)")
        }
    }
}
