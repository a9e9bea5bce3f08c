import Foundation
import PlugboardAPI
import PlugboardCrypto
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Plugins by digest from a store: a manifest entry's `source` with its `sha256`, fetched
/// into the plugin cache from a real moto_server (s3://, signed) and from a plain HTTP
/// server (http://), then loaded as a local file is; and `plugboard publish`.
@Suite(.serialized, .pythonTools)
struct RemoteSourceTests {
    /// The plugin the store holds, and another file whose digest is not its own.
    static let plugin = "\(BuildProducts.folder)/libMemoryStorage.so"
    static let other = "\(BuildProducts.folder)/libFileStorage.so"

    static func sha256(_ path: String) throws -> String {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return Hex.encode(try SHA256Hasher.hash(bytes))
    }

    /// The host's environment for the store on `endpoint`, with `secret` as its key's.
    static func environment(endpoint: String, accessKeyId: String = MotoServer.accessKeyId,
                            secret: String = MotoServer.secretAccessKey) -> [String: String] {
        ["AWS_ACCESS_KEY_ID": accessKeyId, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
         "AWS_ENDPOINT_URL_S3": endpoint, "HOME": "/nonexistent"]
    }

    /// Starts a host on a manifest of one entry, with its own cache folder unless given.
    static func start(source: String, sha256: String, environment: [String: String],
                      cache: String = BuildProducts.temporaryFolder("remote-cache")) async throws -> (PluginHost, String) {
        let folder = BuildProducts.temporaryFolder("remote-manifest")
        let manifest = """
            {"schemaVersion": 1, "plugins": [{"name": "MemoryStorage", "source": "\(source)", "sha256": "\(sha256)"}]}
            """
        try manifest.write(toFile: "\(folder)/plugins.json", atomically: true, encoding: .utf8)
        let host = try await PluginHost.start(PluginHost.Configuration(
            manifestPath: "\(folder)/plugins.json", environment: .testing, cacheDirectory: cache,
            processEnvironment: environment, productSearchPath: []))
        return (host, cache)
    }

    /// What the cache folder holds: entries, `.d` folders, temporary files.
    static func entries(_ cache: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? [])
    }

    /// Puts the plugin in a new bucket of the shared server; returns its source URL.
    static func published(_ server: MotoServer, label: String) throws -> (bucket: String, source: String) {
        let bucket = try server.makeBucket(label)
        let key = "plugins/MemoryStorage/\(try sha256(plugin)).so"
        try server.boto3(["put", server.endpoint, bucket, key, plugin, "application/octet-stream", "{}"])
        return (bucket, "s3://\(bucket)/\(key)")
    }

    @Test func s3Source_isFetchedByDigest_loadsAndServes() async throws {
        let server = try MotoServer.get()
        let (_, source) = try Self.published(server, label: "remote")
        let sha = try Self.sha256(Self.plugin)
        let (host, cache) = try await Self.start(source: source, sha256: sha, environment: Self.environment(endpoint: server.endpoint))
        let record = try #require(host.records.first)
        #expect(record.state == .active, "\(record.error.map { "\($0)" } ?? "")")
        #expect(record.sha256 == sha && record.path == "\(cache)/\(sha).so")
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("greeting", data: Array("hello".utf8), contentType: "text/plain", metadata: [:])
        #expect(try await storage.get("greeting").data == Array("hello".utf8))
        await host.shutdown()
    }

    @Test func pinOfAnotherFile_isRefusedBeforeAnythingIsKeptOrMapped() async throws {
        let server = try MotoServer.get()
        let (_, source) = try Self.published(server, label: "mismatch")
        // The digest of a file no test maps (another test of this process reloads to
        // libFileStorage.so), so that "never mapped" below says something about this host.
        let wrong = Hex.encode(try SHA256Hasher.hash(Array("not a plugin: \(UUID())".utf8)))
        let cache = BuildProducts.temporaryFolder("remote-cache")
        let before = Self.entries(cache)
        let (host, _) = try await Self.start(source: source, sha256: wrong, environment: Self.environment(endpoint: server.endpoint),
                                             cache: cache)
        let record = try #require(host.records.first)
        #expect(record.state == .rejected)
        let error = try #require(record.error)
        #expect(error.code == .checksumMismatch)
        let right = try Self.sha256(Self.plugin)
        #expect(error.message.contains(source) && error.detail?.contains("Expected SHA-256 \(wrong), found \(right)") == true, "\(error)")
        #expect(Self.entries(cache) == before, "nothing of the wrong file stays in the cache")
        #expect(MappedImages.shared.all.allSatisfy { $0.sha256 != wrong })
        let resolved: (any ObjectStorage)? = try? host.container.resolve()
        #expect(resolved == nil)
    }

    @Test func cacheHit_startsWithoutTheStore() async throws {
        let server = try MotoServer.get()
        let (_, source) = try Self.published(server, label: "cached")
        let sha = try Self.sha256(Self.plugin)
        let (first, cache) = try await Self.start(source: source, sha256: sha, environment: Self.environment(endpoint: server.endpoint))
        #expect(first.records.first?.state == .active)
        await first.shutdown()
        // Nothing listens there: any request would fail with source_unreachable.
        let closed = "http://127.0.0.1:\(try ServerProcess.freePort())"
        let (second, _) = try await Self.start(source: source, sha256: sha, environment: Self.environment(endpoint: closed), cache: cache)
        let record = try #require(second.records.first)
        #expect(record.state == .active, "\(record.error.map { "\($0)" } ?? "")")
        await second.shutdown()
    }

    @Test func unreachableStore_onACacheMiss_isAClearError() async throws {
        let closed = "http://127.0.0.1:\(try ServerProcess.freePort())"
        let (host, _) = try await Self.start(source: "s3://nowhere/plugins/x.so", sha256: try Self.sha256(Self.plugin),
                                             environment: Self.environment(endpoint: closed))
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceUnreachable)
        #expect(error.message.contains("s3://nowhere/plugins/x.so") && error.detail?.contains("127.0.0.1") == true, "\(error)")
        #expect(error.hint?.contains("cache") == true)
    }

    @Test func missingKey_is404_withWhatItMeans() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("missing")
        let (host, _) = try await Self.start(source: "s3://\(bucket)/plugins/none.so", sha256: try Self.sha256(Self.plugin),
                                             environment: Self.environment(endpoint: server.endpoint))
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceNotFound, "\(error)")
        #expect(error.message.contains("404") && error.hint?.contains("plugboard publish") == true)
    }

    @Test func wrongCredentials_are403_withWhatItMeans() async throws {
        let (server, bucket, _) = try S3StorageSignatureTests.setUp.get()
        let (host, _) = try await Self.start(source: "s3://\(bucket)/plugins/x.so", sha256: try Self.sha256(Self.plugin),
                                             environment: Self.environment(endpoint: server.endpoint, accessKeyId: "AKIAWRONGWRONGWRONG0",
                                                                           secret: "not-the-secret"))
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceDenied, "\(error)")
        #expect(error.message.contains("403") && error.hint?.contains("AWS_ACCESS_KEY_ID") == true)
        #expect(!"\(error)".contains("not-the-secret"))
    }

    /// The misbehaving store of Python/s3_stub.py: its bucket name picks the answer.
    static func stubError(bucket: String) async throws -> PlugboardError {
        let stub = try S3Stub.get()
        let (host, cache) = try await Self.start(source: "s3://\(bucket)/plugins/x.so", sha256: try Self.sha256(Self.plugin),
                                                 environment: Self.environment(endpoint: stub.endpoint))
        #expect(Self.entries(cache).isEmpty, "nothing of a failed download stays in the cache")
        return try #require(host.records.first?.error)
    }

    @Test func storeFailure_500_saysItIsTheStores() async throws {
        let error = try await Self.stubError(bucket: "broken")
        #expect(error.code == .sourceFailed && error.message.contains("500"), "\(error)")
        #expect(error.detail?.contains("failed on its side") == true && error.hint?.contains("store's health") == true)
    }

    @Test func storeUnavailable_503_isRetriedThenRefused() async throws {
        let error = try await Self.stubError(bucket: "down")
        #expect(error.code == .sourceFailed && error.message.contains("503"), "\(error)")
    }

    @Test func storeThatRecovers_isRetried_andItsBytesStillMeetThePin() async throws {
        // Two 503s, then "ok": the retries reach the answer, whose bytes are not the pin's.
        let error = try await Self.stubError(bucket: "flaky-2")
        #expect(error.code == .checksumMismatch, "\(error)")
    }

    @Test func answerThatBreaksOff_isRetriedThenUnreachable() async throws {
        let error = try await Self.stubError(bucket: "cut")
        #expect(error.code == .sourceUnreachable && error.message.contains("broke off"), "\(error)")
    }

    @Test func httpSource_isFetchedFromAPlainServer() async throws {
        let folder = BuildProducts.temporaryFolder("remote-http")
        try FileManager.default.copyItem(atPath: Self.plugin, toPath: "\(folder)/libMemoryStorage.so")
        let port = try ServerProcess.freePort()
        _ = try ServerProcess(try MotoServer.python(), ["-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, String(port)],
                              port: port)
        let sha = try Self.sha256(Self.plugin)
        let (host, _) = try await Self.start(source: "http://127.0.0.1:\(port)/libMemoryStorage.so", sha256: sha, environment: [:])
        #expect(host.records.first?.state == .active, "\(host.records.first?.error.map { "\($0)" } ?? "")")
        await host.shutdown()
        // A presigned URL's query is a credential: no message shows it.
        let (missing, _) = try await Self.start(source: "http://127.0.0.1:\(port)/none.so?X-Amz-Signature=0123456789abcdef",
                                                sha256: sha, environment: [:])
        let error = try #require(missing.records.first?.error)
        #expect(error.code == .sourceNotFound && error.message.contains("none.so?…"), "\(error)")
        #expect(!"\(error)".contains("0123456789abcdef"))
    }

    /// A reload to another digest fetches it and runs it through the preflight child from
    /// the cache; the same source and digest again is no change.
    @Test func reloadToAnotherDigest_fetchesIt_andPreflightsTheCachedCopy() async throws {
        let folder = BuildProducts.temporaryFolder("remote-reload")
        for file in [Self.plugin, Self.other] {
            try FileManager.default.copyItem(atPath: file, toPath: "\(folder)/\(URL(fileURLWithPath: file).lastPathComponent)")
        }
        let port = try ServerProcess.freePort()
        _ = try ServerProcess(try MotoServer.python(), ["-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, String(port)],
                              port: port)
        func write(_ file: String, sha: String, config: String) throws {
            let text = """
                {"schemaVersion": 1, "environment": "testing", "hotSwap": {"enabled": true, "debounceMilliseconds": 0},
                 "plugins": [{"name": "Store", "source": "http://127.0.0.1:\(port)/\(file)", "sha256": "\(sha)", "config": \(config)}]}
                """
            try text.write(toFile: "\(folder)/plugins.new", atomically: false, encoding: .utf8)
            rename("\(folder)/plugins.new", "\(folder)/plugins.json")
        }
        try write("libMemoryStorage.so", sha: try Self.sha256(Self.plugin), config: "{}")
        let cache = BuildProducts.temporaryFolder("remote-cache")
        let host = try await PluginHost.start(PluginHost.Configuration(
            manifestPath: "\(folder)/plugins.json", cacheDirectory: cache, processEnvironment: ProcessEnvironmentSnapshot.capture(),
            productSearchPath: [], preflightExecutable: "\(BuildProducts.folder)/plugboard"))
        #expect(host.records.first?.state == .active)
        let next = try Self.sha256(Self.other)
        try write("libFileStorage.so", sha: next, config: #"{"root": "\#(folder)/data"}"#)
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.result == .applied && outcome.changed == ["Store"], "\(outcome.error.map { "\($0)" } ?? "")")
        #expect(host.records.first?.path == "\(cache)/\(next).so")
        #expect(await host.reload(trigger: "test").result == .unchanged)
        await host.shutdown()
    }

    @Test func httpsSource_withNothingListening_isUnreachable() async throws {
        let closed = "https://127.0.0.1:\(try ServerProcess.freePort())/libMemoryStorage.so"
        let (host, _) = try await Self.start(source: closed, sha256: try Self.sha256(Self.plugin), environment: [:])
        let error = try #require(host.records.first?.error)
        #expect(error.code == .sourceUnreachable && error.message.contains(closed), "\(error)")
        #expect(error.detail?.contains("https://127.0.0.1") == true && error.detail?.contains("4 attempts") == true, "\(error)")
    }

    @Test func publish_printsAnEntryThatLoads_andSkipsWhatIsThere() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("publish")
        let environment = Self.environment(endpoint: server.endpoint)
        func publish() throws -> [String: Any] { try Self.publish(to: bucket, environment: environment) }
        let first = try publish()
        let entry = try #require(first["entry"] as? [String: String])
        let sha = try Self.sha256(Self.plugin)
        #expect(entry == ["name": "MemoryStorage", "source": "s3://\(bucket)/builds/MemoryStorage/\(sha).so", "sha256": sha])
        #expect(first["uploaded"] as? Bool == true)
        #expect(try publish()["uploaded"] as? Bool == false)

        let metadata = try server.boto3(["get", server.endpoint, bucket, "builds/MemoryStorage/\(sha).so", "/dev/null"])
        #expect(metadata.contains("plugboard-sha256") && metadata.contains("plugboard-api-version"), "\(metadata)")

        let (host, _) = try await Self.start(source: entry["source"] ?? "", sha256: entry["sha256"] ?? "", environment: environment)
        #expect(host.records.first?.state == .active, "\(host.records.first?.error.map { "\($0)" } ?? "")")
        await host.shutdown()
    }
}

extension RemoteSourceTests {
    /// What `plugboard publish PLUGIN s3://BUCKET/builds/ --json` prints, run with `environment`.
    static func publish(to bucket: String, environment: [String: String]) throws -> [String: Any] {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "\(BuildProducts.folder)/plugboard")
        child.arguments = ["publish", plugin, "s3://\(bucket)/builds/", "--json"]
        child.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        #expect(child.terminationStatus == 0, "\(String(decoding: data, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
