import Foundation
import PlugboardAPI
import PlugboardCrypto
import PlugboardHost
import PlugboardJSON
import PlugboardTesting
import PlugboardTestSupport
import Testing

/// libS3Storage.so, loaded through the host's loader, against a real moto_server.
@Suite(.serialized, .pythonTools) struct S3StorageMotoTests {
    /// What moto_server gets wrong for every client (boto3 included), checked with boto3 on
    /// the same server, so that the exceptions below disappear when moto is fixed.
    struct MotoLimits: Decodable {
        var multipartBodyKept: Bool
        var newlineKeyWorks: Bool
    }

    @Test func passesTheConformanceSuite_exceptWhatMotoGetsWrongForBoto3Too() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("conformance")
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: bucket, server: server))
        let options = ObjectStorageConformance.Options(concurrentTasks: 8)
        let report = await ObjectStorageConformance(makeStorage: { storage }, options: options).run()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)

        let limits = try JSONDecoder().decode(MotoLimits.self, from: Data(try server.boto3(["moto-limits", server.endpoint, bucket]).utf8))
        var excused: Set<String> = []
        if !limits.multipartBodyKept { excused.insert("content_type_roundtrip_and_default") }
        if !limits.newlineKeyWorks { excused.insert("key_special_characters_ok") }
        for result in report.results {
            if case .failed(let reason) = result.outcome {
                #expect(excused.contains(result.name) || MotoRaces.excuse(result.name, reason, in: report), "\(result.name): \(reason)")
            }
        }
        let left = try await storage.list(prefix: "", limit: 1000, continuationToken: nil)
        #expect(left.objects.isEmpty, "every rule deletes what it wrote")
    }

    /// The two excused rules, minus the one case moto cannot store.
    @Test func excusedRulesHoldForEverythingMotoCanStore() async throws {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("excused"), server: server))
        try await S3Interop.contentTypesAndSpecialKeysRoundTrip(storage, newlineKeys: false)
    }

    /// ListObjectsV2 has neither content type nor metadata: a listing says so instead of
    /// claiming the defaults, and what the CLI and the HTTP API print of it is null.
    @Test func listingsSayTheyDoNotKnowContentTypeOrMetadata() async throws {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("unknown"), server: server))
        let put = try await storage.put("typed", data: Array("x".utf8), contentType: "text/csv", metadata: ["source": "test"])
        #expect(put.unknown.isEmpty && put.knownContentType == "text/csv" && put.knownMetadata == ["source": "test"])
        let head = try await storage.head("typed")
        #expect(head.unknown.isEmpty && head.contentType == "text/csv" && head.metadata == ["source": "test"])

        let listed = try await storage.list(prefix: "", limit: 10, continuationToken: nil).objects
        #expect(listed.map(\.key) == ["typed"])
        let entry = try #require(listed.first)
        #expect(entry.unknown == [.contentType, .metadata])
        #expect(entry.knownContentType == nil && entry.knownMetadata == nil)
        // Code built against 1.0 reads the defaults, as before.
        #expect(entry.contentType == "application/octet-stream" && entry.metadata.isEmpty)
        #expect(entry.size == head.size && entry.etag == head.etag && entry.lastModified == head.lastModified)

        let json = Reports.object(entry).render(pretty: false)
        #expect(json.contains("\"contentType\":null") && json.contains("\"metadata\":null"), "\(json)")
        let headJSON = Reports.object(head).render(pretty: false)
        #expect(headJSON.contains("\"contentType\":\"text/csv\"") && headJSON.contains("\"metadata\":{\"source\":\"test\"}"), "\(headJSON)")
    }

    @Test func interop_plugboardWritesBoto3Reads() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("interop")
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: bucket, server: server))
        try await S3Interop.plugboardWritesBoto3Reads(storage, endpoint: server.endpoint, bucket: bucket, boto3: server.boto3)
    }

    @Test func interop_boto3WritesPlugboardReads() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("interop")
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: bucket, server: server))
        try await S3Interop.boto3WritesPlugboardReads(storage, endpoint: server.endpoint, bucket: bucket, boto3: server.boto3)
    }
}
