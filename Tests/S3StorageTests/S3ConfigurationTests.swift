import Foundation
import PlugboardAPI
import Testing
import PlugboardSigV4
@testable import S3StorageClient

/// Reading the plugin config, and credentials in the order AWS SDKs use.
@Suite struct S3ConfigurationTests {
    static func config(_ values: [String: ConfigValue]) -> PluginConfig { PluginConfig(values, plugin: "S3Storage") }
    static let keys: [String: ConfigValue] = ["accessKeyId": "AKIDCONFIG", "secretAccessKey": "config-secret"]

    static func expectConfigInvalid(_ values: [String: ConfigValue], _ environment: [String: String] = [:],
                                    containing expected: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        do {
            _ = try S3Configuration(config(values), environment: AWSEnvironment(environment))
            Issue.record("expected plugin.config_invalid containing \(expected)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .configInvalid, sourceLocation: sourceLocation)
            #expect("\(error)".contains(expected), "\(error)", sourceLocation: sourceLocation)
            for secret in ["config-secret", "env-secret", "file-secret"] {
                #expect(!"\(error)".contains(secret), sourceLocation: sourceLocation)
            }
        }
    }

    @Test func defaults_awsVirtualHosted() throws {
        let c = try S3Configuration(Self.config(["bucket": "photos"].merging(Self.keys) { $1 }), environment: AWSEnvironment([:]))
        #expect(c.region == "us-east-1" && c.endpoint == S3Endpoint.aws(region: "us-east-1") && !c.pathStyle)
        #expect(c.endpoint.description == "https://s3.us-east-1.amazonaws.com")
        #expect(c.timeoutSeconds == 30 && c.maxRetries == 3)
    }

    @Test func endpointOverride_pathStyleByDefault() throws {
        let c = try S3Configuration(Self.config(["bucket": "b-1", "endpoint": "http://127.0.0.1:9000/", "region": "eu-west-1",
                                                 "timeoutSeconds": 2.5, "maxRetries": 0].merging(Self.keys) { $1 }),
                                    environment: AWSEnvironment([:]))
        #expect(c.endpoint == S3Endpoint(scheme: "http", host: "127.0.0.1", port: 9000, isAWS: false))
        // URLSession counts whole seconds: 2.5 is rounded up, never down to less.
        #expect(c.pathStyle && c.region == "eu-west-1" && c.timeoutSeconds == 3 && c.maxRetries == 0)
        let virtual = try S3Configuration(Self.config(["bucket": "b-1", "endpoint": "https://minio.example:443", "pathStyle": false]
            .merging(Self.keys) { $1 }), environment: AWSEnvironment([:]))
        #expect(!virtual.pathStyle && virtual.endpoint.authority == "minio.example")
    }

    @Test func regionFromTheEnvironmentWhenTheConfigHasNone() throws {
        let c = try S3Configuration(Self.config(["bucket": "photos", "region": ""].merging(Self.keys) { $1 }),
                                    environment: AWSEnvironment(["AWS_REGION": "ap-south-1"]))
        #expect(c.region == "ap-south-1" && c.endpoint.host == "s3.ap-south-1.amazonaws.com")
    }

    @Test func refusals() {
        Self.expectConfigInvalid(Self.keys, containing: "missing configuration key \"config.bucket\"")
        Self.expectConfigInvalid(["bucket": ""].merging(Self.keys) { $1 }, containing: "PLUGBOARD_S3_BUCKET")
        Self.expectConfigInvalid(["bucket": "ab"].merging(Self.keys) { $1 }, containing: "config.bucket")
        Self.expectConfigInvalid(["bucket": "photos", "buckett": "x"].merging(Self.keys) { $1 }, containing: "Did you mean \"bucket\"?")
        Self.expectConfigInvalid(["bucket": "photos", "endpoint": "ftp://x"].merging(Self.keys) { $1 }, containing: "http://")
        Self.expectConfigInvalid(["bucket": "photos", "endpoint": "http://user:pa55word@host"].merging(Self.keys) { $1 }, containing: "user name")
        Self.expectConfigInvalid(["bucket": "photos", "endpoint": "http://host/path"].merging(Self.keys) { $1 }, containing: "path")
        Self.expectConfigInvalid(["bucket": "photos", "endpoint": "http://host:99999"].merging(Self.keys) { $1 }, containing: "port")
        Self.expectConfigInvalid(["bucket": "my.bucket", "pathStyle": false].merging(Self.keys) { $1 }, containing: "virtual-hosted")
        Self.expectConfigInvalid(["bucket": "photos", "region": "EU West"].merging(Self.keys) { $1 }, containing: "config.region")
        Self.expectConfigInvalid(["bucket": "photos", "timeoutSeconds": 0].merging(Self.keys) { $1 }, containing: "timeoutSeconds")
        Self.expectConfigInvalid(["bucket": "photos", "maxRetries": 11].merging(Self.keys) { $1 }, containing: "maxRetries")
        Self.expectConfigInvalid(["bucket": "photos", "maxRetries": "3"].merging(Self.keys) { $1 }, containing: "an integer")
    }

    @Test func endpointPasswordIsNeverEchoed() {
        Self.expectConfigInvalid(["bucket": "photos", "endpoint": "https://AKID:hunter2hunter2@s3.example"].merging(Self.keys) { $1 },
                                 containing: "endpoint")
        do {
            _ = try S3Configuration(Self.config(["bucket": "photos", "endpoint": "https://AKID:hunter2hunter2@s3.example"]
                .merging(Self.keys) { $1 }), environment: AWSEnvironment([:]))
        } catch {
            #expect(!"\(error)".contains("hunter2"))
        }
    }

    // MARK: - Credentials order

    /// A temporary shared credentials file with two profiles.
    static func credentialsFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("s3-credentials-\(UUID().uuidString)").path
        try """
            # comment
            [default]
            aws_access_key_id = AKIDFILEDEFAULT
            aws_secret_access_key = file-secret-default

            [profile ci]
            AWS_ACCESS_KEY_ID=AKIDFILECI
            aws_secret_access_key=file-secret-ci
            aws_session_token = file-token-ci
            ; another comment
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let environmentKeys = ["AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "env-token"]

    @Test func configFirst_thenEnvironment_thenSharedFile() throws {
        let file = try Self.credentialsFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        var environment = Self.environmentKeys.merging(["AWS_SHARED_CREDENTIALS_FILE": file]) { $1 }
        let withKeys = Self.config(["bucket": "photos", "sessionToken": "config-token"].merging(Self.keys) { $1 })
        let fromConfig = try AWSCredentials.resolve(withKeys, environment: AWSEnvironment(environment))
        #expect(fromConfig == AWSCredentials(accessKeyId: "AKIDCONFIG", secretAccessKey: "config-secret", sessionToken: "config-token", source: "plugin config"))

        let bare = Self.config(["bucket": "photos"])
        let fromEnvironment = try AWSCredentials.resolve(bare, environment: AWSEnvironment(environment))
        #expect(fromEnvironment == AWSCredentials(accessKeyId: "AKIDENV", secretAccessKey: "env-secret", sessionToken: "env-token", source: "environment"))

        for name in Self.environmentKeys.keys { environment.removeValue(forKey: name) }
        let fromFile = try AWSCredentials.resolve(bare, environment: AWSEnvironment(environment))
        #expect(fromFile.accessKeyId == "AKIDFILEDEFAULT" && fromFile.secretAccessKey == "file-secret-default" && fromFile.sessionToken == nil)
        #expect(fromFile.source == "shared credentials file \(file), profile default")

        environment["AWS_PROFILE"] = "ci"
        let fromProfile = try AWSCredentials.resolve(bare, environment: AWSEnvironment(environment))
        #expect(fromProfile.accessKeyId == "AKIDFILECI" && fromProfile.secretAccessKey == "file-secret-ci" && fromProfile.sessionToken == "file-token-ci")
    }

    @Test func homeCredentialsFileWhenNoVariableNamesOne() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("s3-home-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        try FileManager.default.createDirectory(atPath: "\(home)/.aws", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try Self.credentialsFile(), toPath: "\(home)/.aws/credentials")
        let found = try AWSCredentials.resolve(Self.config(["bucket": "photos"]), environment: AWSEnvironment(["HOME": home]))
        #expect(found.accessKeyId == "AKIDFILEDEFAULT" && found.source.contains("\(home)/.aws/credentials"))
    }

    @Test func credentialRefusals() throws {
        let file = try Self.credentialsFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        Self.expectConfigInvalid(["bucket": "photos", "accessKeyId": "AKID"], containing: "secretAccessKey is not")
        Self.expectConfigInvalid(["bucket": "photos"], ["AWS_SECRET_ACCESS_KEY": "env-secret"], containing: "AWS_ACCESS_KEY_ID is not")
        Self.expectConfigInvalid(["bucket": "photos"], ["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "nope"],
                                 containing: "no profile \"nope\"")
        Self.expectConfigInvalid(["bucket": "photos"], ["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"],
                                 containing: "cannot read the shared credentials file")
        Self.expectConfigInvalid(["bucket": "photos"], ["HOME": "/nonexistent"], containing: "no S3 credentials found")
        Self.expectConfigInvalid(["bucket": "photos"], [:], containing: "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    }

    @Test func sharedFileParsing() {
        let profiles = SharedCredentialsFile.parse("[a]\r\nx = 1 \r\n[ b ]\ny=2\nbroken line\n[c\nz=3\n")
        #expect(profiles["a"] == ["x": "1"])
        #expect(profiles["b"] == ["y": "2"])
        #expect(profiles["c"] == nil)
    }
}
