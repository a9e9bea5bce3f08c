import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

/// DeleteBucket through one gateway against writes through another over one storage
/// (issue 32): two contexts with gates of their own, as two `serve --s3-listen` processes
/// have, so that only the fence in the storage (``S3BucketFence``) orders them.
@Suite struct BucketFenceTests {
    /// The put found the bucket, and the other gateway deleted it (empty) before the put
    /// landed: the put removes its object and answers NoSuchBucket. Before the fence it
    /// answered 200 for an object no listing showed.
    @Test func aPutLandingAfterADeleteThroughAnotherGateway_undoesItself() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let held = HeldStorage(s3.storage, holding: .put("photos/a.jpg"))
        let gatewayA = S3Context(storage: held, logger: .disabled, region: s3.region, buckets: S3BucketGate())
        let gatewayB = S3Context(storage: s3.storage, logger: .disabled, region: s3.region, buckets: S3BucketGate())

        async let put = s3Error { try await ObjectOperations.putObject(gatewayA, s3.request("PUT", bucket: "photos", key: "a.jpg", body: Array("jpeg".utf8))) }
        // Released however the test ends, before the held request is awaited.
        defer { held.release() }
        await held.reached()
        #expect(try await BucketOperations.deleteBucket(gatewayB, s3.request("DELETE", bucket: "photos")).status == 204)
        held.release()
        let refused = await put
        #expect(refused?.code == "NoSuchBucket")
        #expect(refused?.message.contains("deleted meanwhile") == true, "\(refused?.message ?? "")")
        #expect(try await s3.storage.list(prefix: "photos/").isEmpty)
        #expect(try await s3.storage.list(prefix: S3BucketFence.deletionKey("photos")).isEmpty)
    }

    /// The put lands while the other gateway's deletion has marked the bucket and found
    /// it empty: the put waits for the deletion's outcome, then removes its object.
    @Test func aPutLandingDuringADeleteThroughAnotherGateway_waitsForIt_thenUndoesItself() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let held = HeldStorage(s3.storage, holding: .delete(S3Namespace.markerKey(bucket: "photos")))
        let gatewayA = S3Context(storage: s3.storage, logger: .disabled, region: s3.region, buckets: S3BucketGate())
        let gatewayB = S3Context(storage: held, logger: .disabled, region: s3.region, buckets: S3BucketGate())

        async let deleted = BucketOperations.deleteBucket(gatewayB, s3.request("DELETE", bucket: "photos"))
        defer { held.release() }
        await held.reached()
        #expect(S3BucketFence.isDeleting(try await s3.storage.head(S3Namespace.markerKey(bucket: "photos"))))
        async let put = s3Error { try await ObjectOperations.putObject(gatewayA, s3.request("PUT", bucket: "photos", key: "a.jpg", body: Array("jpeg".utf8))) }
        // The put has landed and is waiting for the deletion (the bound only says "this hung").
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !s3.storage.exists("photos/a.jpg") {
            try #require(ContinuousClock.now < deadline, "the put never landed")
            await Task.yield()
        }
        held.release()
        #expect(try await deleted.status == 204)
        #expect(await put?.code == "NoSuchBucket")
        #expect(try await s3.storage.list(prefix: "photos/").isEmpty)
    }

    /// A deletion that finds an object puts the marker back as it was: the bucket takes
    /// writes at once, through either gateway, and a later deletion is not told one is in
    /// progress.
    @Test func aDeletionThatFindsAnObject_putsTheMarkerBack() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let before = try await s3.storage.head(S3Namespace.markerKey(bucket: "photos"))
        try await s3.put("photos", "a.jpg", "jpeg")
        let gatewayB = S3Context(storage: s3.storage, logger: .disabled, region: s3.region, buckets: S3BucketGate())
        let refused = await s3Error { try await BucketOperations.deleteBucket(gatewayB, s3.request("DELETE", bucket: "photos")) }
        #expect(refused?.code == "BucketNotEmpty")
        let after = try await s3.storage.head(S3Namespace.markerKey(bucket: "photos"))
        #expect(after.etag == before.etag)
        #expect(!S3BucketFence.isDeleting(after))
        #expect(try await s3.put("photos", "b.jpg", "jpeg").status == 200)
        #expect(try await ObjectOperations.putObject(gatewayB, s3.request("PUT", bucket: "photos", key: "c.jpg", body: [1])).status == 200)
        let again = await s3Error { try await BucketOperations.deleteBucket(gatewayB, s3.request("DELETE", bucket: "photos")) }
        #expect(again?.code == "BucketNotEmpty")
    }

    /// Two deletions through two gateways at once are one after the other: the second is
    /// OperationAborted while the first's claim is fresh, and takes over a claim whose
    /// gateway stopped (older than ``S3BucketFence/abandonedAfter``).
    @Test func aSecondDeletionAtOnce_isOperationAborted_andAnAbandonedOneIsTakenOver() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let claim = S3BucketFence.deletionKey("photos")
        _ = try await s3.storage.put(claim, data: Array("deleting-since \(Timestamp.now().seconds)".utf8))
        let busy = await s3Error { try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos")) }
        #expect(busy?.code == "OperationAborted")
        #expect(busy?.status == 409)
        #expect(busy?.message.contains("Retry") == true, "\(busy?.message ?? "")")
        #expect(!S3BucketFence.isDeleting(try await s3.storage.head(S3Namespace.markerKey(bucket: "photos"))))

        let abandoned = Timestamp.now().seconds - Int64(S3BucketFence.abandonedAfter.components.seconds) - 1
        _ = try await s3.storage.put(claim, data: Array("deleting-since \(abandoned)".utf8))
        #expect(try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos")).status == 204)
        #expect(try await !s3.storage.exists(S3Namespace.markerKey(bucket: "photos")))
        #expect(try await !s3.storage.exists(claim))
    }
}
