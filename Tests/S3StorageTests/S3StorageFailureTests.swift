import Foundation
import PlugboardAPI
import PlugboardHTTPClient
import PlugboardCrypto
import PlugboardHost
import PlugboardTestSupport
import Testing
import PlugboardSigV4
@testable import S3StorageClient

/// Retries, timeouts, cancellation, bodies that are not S3's, and secrets, against the
/// misbehaving S3 of Python/s3_stub.py and against moto_server.
@Suite(.pythonTools) struct S3StorageFailureTests {
    static let secret = "stub-secret-KEY/0123456789+abcdef"
    static let token = "stub-session-TOKEN-0123456789abcdef"
    static let fast = RetryPolicy(maxRetries: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))

    static func storage(_ bucket: String, endpoint: String, timeout: Double = 10, retry: RetryPolicy = fast,
                        logger: Logger = .disabled) throws -> S3Storage {
        let configuration = S3Configuration(
            bucket: bucket, region: "us-east-1", endpoint: try S3Endpoint.parse(endpoint), pathStyle: true,
            credentials: AWSCredentials(accessKeyId: "AKIDSTUB", secretAccessKey: secret, sessionToken: token, source: "test"),
            timeoutSeconds: timeout, maxRetries: retry.maxRetries)
        return S3Storage(configuration: configuration, logger: logger, retry: retry)
    }

    static func expectError(_ code: PlugboardError.Code, containing text: String,
                            sourceLocation: Testing.SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(code), found success", sourceLocation: sourceLocation)
        } catch let error as PlugboardError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect("\(error)".contains(text), "\(error)", sourceLocation: sourceLocation)
            #expect(!"\(error)".contains(secret) && !"\(error)".contains(token), sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected PlugboardError \(code), found \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func slowDownIsRetriedWithBackoffUntilItWorks() async throws {
        let stub = try S3Stub.get()
        let lines = CapturedLines()
        let storage = try Self.storage("flaky-2-\(UUID().uuidString.prefix(8).lowercased())", endpoint: stub.endpoint, logger: lines.logger)
        let object = try await storage.get("k")
        #expect(object.data == Array("ok".utf8))
        #expect(object.info.metadata == ["try": "3"])
        #expect(lines.lines.filter { $0.contains("retrying S3 request") }.count == 2)
        #expect(lines.lines.allSatisfy { !$0.contains(Self.secret) && !$0.contains(Self.token) })
    }

    @Test func unavailableAfterRetriesAreSpent() async throws {
        let stub = try S3Stub.get()
        let lines = CapturedLines()
        let storage = try Self.storage("down", endpoint: stub.endpoint, logger: lines.logger)
        await Self.expectError(.storageUnavailable, containing: "HTTP 503") { _ = try await storage.head("k") }
        await Self.expectError(.storageUnavailable, containing: "Down for maintenance.") { _ = try await storage.get("k") }
        #expect(lines.lines.filter { $0.contains("retrying S3 request") }.count == 6)
    }

    @Test func bodiesThatAreNotS3sAreFailuresNamingWhatWasExpected() async throws {
        let stub = try S3Stub.get()
        let garbage = try Self.storage("garbage", endpoint: stub.endpoint)
        await Self.expectError(.storageFailed, containing: "expected a <ListBucketResult> document, found <html>") {
            _ = try await garbage.list(prefix: "", limit: 10, continuationToken: nil)
        }
        // A redirect is reported, not followed (following it would reach "down": 503).
        let moved = try Self.storage("moved", endpoint: stub.endpoint)
        await Self.expectError(.storageFailed, containing: "(S3 says eu-central-1)") { _ = try await moved.get("k") }
        let corrupt = try Self.storage("corrupt", endpoint: stub.endpoint)
        await Self.expectError(.storageFailed, containing: "the data does not match its ETag") { _ = try await corrupt.get("k") }
        let broken = try Self.storage("broken", endpoint: stub.endpoint)
        await Self.expectError(.storageUnavailable, containing: "not an S3 error document") { _ = try await broken.get("k") }
    }

    @Test func timeoutIsUnavailable() async throws {
        let stub = try S3Stub.get()
        let storage = try Self.storage("slow", endpoint: stub.endpoint, timeout: 1, retry: RetryPolicy(maxRetries: 0))
        let clock = ContinuousClock()
        let start = clock.now
        await Self.expectError(.storageUnavailable, containing: "did not answer in time") { _ = try await storage.get("k") }
        // The error's text already says the timeout ended the request (the stub's answer,
        // after 900 s, would be a success). The bound only has to tell the timeout from that
        // answer: beside the whole suite on two cores, the task that sees the timeout has
        // waited more than 60 s for a thread of the cooperative pool (CI, 61.5 s).
        #expect(clock.now - start < .seconds(600), "the stub answers after 900 s; the timeout is 1 s")
    }

    @Test func cancellationStopsTheRequest() async throws {
        let stub = try S3Stub.get()
        // Its own slow bucket, so that the arrival counted is this test's request.
        let storage = try Self.storage("slow-cancelled", endpoint: stub.endpoint, timeout: 1200)
        let task = Task { try await storage.get("k") }
        // Cancelled once the request is at the stub, not before it is sent.
        let arrived = try Self.storage("arrived", endpoint: stub.endpoint, timeout: 300)
        let came = try await arrived.client.send(S3Request(method: "GET", key: "slow-cancelled", query: [("count", "1")]),
                                                 S3Operation(kind: .get, key: "slow-cancelled", bucket: "arrived"))
        try #require(String(decoding: came.body, as: UTF8.self) == "1", "the request did not reach the stub in 240 s")
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        let result = await task.result
        // The stub answers after 900 s and the timeout is 1,200 s: a liveness bound well
        // below both, loose enough for a loaded machine (beside the whole suite on two
        // cores, a resumed task has waited more than 60 s for a thread of the pool).
        #expect(clock.now - start < .seconds(600))
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func secretsEchoedByTheServerNeverReachErrorsOrLogs() async throws {
        let stub = try S3Stub.get()
        let lines = CapturedLines()
        let storage = try Self.storage("echo", endpoint: stub.endpoint, logger: lines.logger)
        // The stub repeats every request header, the session token included.
        await Self.expectError(.storageAccessDenied, containing: "<redacted>") { _ = try await storage.get("k") }
        await Self.expectError(.storageAccessDenied, containing: "token <redacted>") { _ = try await storage.put("k", data: [1]) }
        await Self.expectError(.storageAccessDenied, containing: "AccessDenied") { _ = try await storage.list(prefix: "", limit: 5, continuationToken: nil) }
        #expect(lines.lines.allSatisfy { !$0.contains(Self.secret) && !$0.contains(Self.token) })
    }

    /// A store whose ETags are not MD5s (SSE-KMS): the object is written again with its
    /// MD5 in metadata, which head and get read back as the ETag and do not show.
    @Test func storeWithoutMD5ETags_keepsTheMD5Itself() async throws {
        let stub = try S3Stub.get()
        let storage = try Self.storage("kms", endpoint: stub.endpoint)
        let data = Array("not an md5 etag".utf8)
        let info = try await storage.put("k", data: data, contentType: "text/plain", metadata: ["owner": "me"])
        let expected = Hex.encode(try MD5Hasher.hash(data))
        #expect(info.etag == expected)
        let head = try await storage.head("k")
        #expect(head.etag == expected && head.metadata == ["owner": "me"] && head.size == data.count)
        let object = try await storage.get("k")
        #expect(object.data == data && object.info == head)
        let puts = try await storage.client.send(S3Request(method: "GET", key: "k", query: [("puts", "")]),
                                                 S3Operation(kind: .get, key: "puts", bucket: "kms"))
        #expect(String(decoding: puts.body, as: UTF8.self) == "2")
        // Another client's multipart object: get gives the data's MD5, not a failure.
        let foreign = try await storage.get("foreign")
        #expect(foreign.data == Array("written elsewhere".utf8))
        #expect(foreign.info.etag == Hex.encode(try MD5Hasher.hash(foreign.data)))
    }

    /// The same store, written by a streamed put: its body cannot be sent twice, so the
    /// MD5 is kept by a CopyObject of the object onto itself.
    @Test func storeWithoutMD5ETags_streamedPut_keepsTheMD5ByCopying() async throws {
        let stub = try S3Stub.get()
        let storage = try Self.storage("kms", endpoint: stub.endpoint)
        let data = (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }
        let chunks = stride(from: 0, to: data.count, by: 70_001).map { Array(data[$0..<min($0 + 70_001, data.count)]) }
        let stream = AsyncStream<[UInt8]> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
        let info = try await storage.put("streamed", body: ObjectBody(length: data.count, stream), contentType: "text/plain",
                                         metadata: ["owner": "me"], condition: .none)
        let expected = Hex.encode(try MD5Hasher.hash(data))
        #expect(info.etag == expected)
        let head = try await storage.head("streamed")
        #expect(head.etag == expected && head.metadata == ["owner": "me"] && head.size == data.count && head.contentType == "text/plain")
        #expect(try await storage.get("streamed").data == data)
        // One PUT of the body, one CopyObject onto itself.
        let puts = try await storage.client.send(S3Request(method: "GET", key: "streamed", query: [("puts", "")]),
                                                 S3Operation(kind: .get, key: "streamed", bucket: "kms"))
        #expect(String(decoding: puts.body, as: UTF8.self) == "2")
    }

    @Test func unreachableServer_loadsWithAWarning_thenUnavailable() async throws {
        let port = try ServerProcess.freePort()
        let lines = CapturedLines()
        let config: [String: ConfigValue] = [
            "bucket": "nowhere", "endpoint": .string("http://127.0.0.1:\(port)"), "accessKeyId": "AKIDX",
            "secretAccessKey": .string(Self.secret), "sessionToken": .string(Self.token), "maxRetries": 1, "timeoutSeconds": 2,
        ]
        let (container, record) = try await S3PluginFixture.load(config, logger: lines.logger)
        #expect(record.state == .active)
        let storage: any ObjectStorage = try container.resolve()
        await Self.expectError(.storageUnavailable, containing: "cannot reach http://127.0.0.1:\(port)") { _ = try await storage.head("k") }
        #expect(lines.lines.contains { $0.contains("S3 not reachable at start") })
        #expect(lines.lines.contains { $0.contains("S3 storage configured") && $0.contains("credentials=plugin config") })
        #expect(lines.lines.allSatisfy { !$0.contains(Self.secret) && !$0.contains(Self.token) })
    }

    @Test func missingBucketFailsTheLoadNamingIt() async throws {
        let server = try MotoServer.get()
        let lines = CapturedLines()
        let (_, record) = try await S3PluginFixture.load(S3PluginFixture.config(bucket: "never-created-bucket", server: server), logger: lines.logger)
        #expect(record.state != .active)
        let text = record.error.map { "\($0)" } ?? ""
        #expect(text.contains("\"never-created-bucket\" does not exist"), "\(text)")
        #expect(!text.contains(MotoServer.secretAccessKey))
        #expect(lines.lines.allSatisfy { !$0.contains(MotoServer.secretAccessKey) })
        // Operations on the missing bucket say so too; delete does not pass for success.
        let direct = S3Storage(configuration: try S3Configuration(
            PluginConfig(S3PluginFixture.config(bucket: "never-created-bucket", server: server), plugin: "S3Storage"),
            environment: AWSEnvironment([:])), logger: .disabled, retry: Self.fast)
        await Self.expectError(.storageFailed, containing: "\"never-created-bucket\" does not exist") { try await direct.delete("k") }
        await Self.expectError(.storageFailed, containing: "Create the bucket") { _ = try await direct.get("k") }
        await Self.expectError(.storageFailed, containing: "NoSuchBucket") { _ = try await direct.list(prefix: "", limit: 1, continuationToken: nil) }
    }

    @Test func missingKeyAndTokensNotIssuedHere() async throws {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("tokens"), server: server))
        await Self.expectError(.storageNotFound, containing: "no object under key") { _ = try await storage.get("missing") }
        await Self.expectError(.storageNotFound, containing: "no object under key") { _ = try await storage.head("missing") }
        try await storage.delete("missing")
        for index in 0..<3 { try await storage.put("p/\(index)", data: [UInt8(index)]) }
        let first = try await storage.list(prefix: "p/", limit: 1, continuationToken: nil)
        let token = try #require(first.nextContinuationToken)
        // A token is bound to its prefix, and cannot be edited.
        await Self.expectError(.storageInvalidArgument, containing: "did not issue") {
            _ = try await storage.list(prefix: "q/", limit: 1, continuationToken: token)
        }
        var edited = Array(token.utf8)
        edited[edited.count - 2] = edited[edited.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        await Self.expectError(.storageInvalidArgument, containing: "did not issue") {
            _ = try await storage.list(prefix: "p/", limit: 1, continuationToken: String(decoding: edited, as: UTF8.self))
        }
        let second = try await storage.list(prefix: "p/", limit: 5, continuationToken: token)
        #expect(second.objects.map(\.key) == ["p/1", "p/2"] && second.nextContinuationToken == nil)
    }
}
