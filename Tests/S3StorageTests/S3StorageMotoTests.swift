import Foundation
import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import Testing

/// libS3Storage.so, loaded through the host's loader, against a real moto_server.
@Suite(.serialized) struct S3StorageMotoTests {
    @Test func passesTheWholeConformanceSuite() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("conformance")
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: bucket, server: server))
        let options = ObjectStorageConformance.Options(largeObjectByteCount: 64 * 1024 * 1024, concurrentTasks: 8)
        let report = await ObjectStorageConformance(makeStorage: { storage }, options: options).run()
        try report.requireAllPassed()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        let left = try await storage.list(prefix: "", limit: 1000, continuationToken: nil)
        #expect(left.objects.isEmpty, "every rule deletes what it wrote")
    }
}
