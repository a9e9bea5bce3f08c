import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Synchronization
import Testing

/// DeleteBucket against writes into the bucket: one of the two fails, whichever way they
/// interleave, and an acknowledged object is never left outside every listing. Each test
/// holds one storage call of the first request at the point where the race was lost, and
/// runs the other request while it is held.
@Suite struct BucketDeletionRaceTests {
    /// A PutObject whose body is being stored when DeleteBucket comes: the delete is
    /// refused, the put is acknowledged and listed.
    @Test func aDeleteDuringAPut_isRefused_andThePutIsKept() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let held = HeldStorage(s3.storage, holding: .put("photos/a.jpg"))
        let context = S3Context(storage: held, logger: .disabled, region: s3.region, buckets: s3.buckets)

        async let put = ObjectOperations.putObject(context, s3.request("PUT", bucket: "photos", key: "a.jpg", body: Array("jpeg".utf8)))
        // Released however the test ends, before the held request is awaited.
        defer { held.release() }
        await held.reached()
        let refused = await s3Error { try await BucketOperations.deleteBucket(context, s3.request("DELETE", bucket: "photos")) }
        #expect(refused?.code == "BucketNotEmpty")
        #expect(refused?.message.contains("write") == true, "\(refused?.message ?? "")")
        held.release()
        #expect(try await put.status == 200)

        #expect(try await s3.storage.exists(S3Namespace.markerKey(bucket: "photos")))
        let listing = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "photos", query: [("list-type", "2")])).document()
        #expect(listing.children("Contents").map { $0.text("Key") } == ["a.jpg"])
    }

    /// A PutObject that comes while DeleteBucket is removing the marker: it waits for the
    /// delete, then answers NoSuchBucket and stores nothing.
    @Test func aPutDuringADelete_waits_thenFindsNoBucket_andStoresNothing() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let held = HeldStorage(s3.storage, holding: .delete(S3Namespace.markerKey(bucket: "photos")))
        let context = S3Context(storage: held, logger: .disabled, region: s3.region, buckets: s3.buckets)

        async let deleted = BucketOperations.deleteBucket(context, s3.request("DELETE", bucket: "photos"))
        // Released however the test ends, before the held request is awaited.
        defer { held.release() }
        await held.reached()
        async let put = s3Error { try await ObjectOperations.putObject(context, s3.request("PUT", bucket: "photos", key: "a.jpg", body: Array("jpeg".utf8))) }
        // The put waits in the gate for the delete (the bound only says "this hung").
        let deadline = ContinuousClock.now + .seconds(60)
        while s3.buckets.waitingCount("photos") == 0 {
            try #require(ContinuousClock.now < deadline, "the put never waited for the delete")
            await Task.yield()
        }
        held.release()
        #expect(try await deleted.status == 204)
        #expect(await put?.code == "NoSuchBucket")
        #expect(try await !s3.storage.exists("photos/a.jpg"))
    }

    /// The same for an upload's part: the bucket holds no object yet, and without the gate
    /// the delete would abort the upload under the part being stored.
    @Test func aDeleteDuringAnUploadPart_isRefused() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "photos", key: "big", query: [("uploads", "")]))
        let id = try #require(try created.document().text("UploadId"))

        let partKey = MultipartLayout.partKey(bucket: "photos", uploadID: id, partNumber: 1)
        let held = HeldStorage(s3.storage, holding: .put(partKey))
        let context = S3Context(storage: held, logger: .disabled, region: s3.region, buckets: s3.buckets)
        async let part = MultipartOperations.uploadPart(context, s3.request("PUT", bucket: "photos", key: "big", query: [("partNumber", "1"), ("uploadId", id)], body: [1]))
        // Released however the test ends, before the held request is awaited.
        defer { held.release() }
        await held.reached()
        let refused = await s3Error { try await BucketOperations.deleteBucket(context, s3.request("DELETE", bucket: "photos")) }
        #expect(refused?.code == "BucketNotEmpty")
        held.release()
        #expect(try await part.status == 200)
        #expect(try await s3.storage.exists(partKey))
    }

    /// Reads trust a bucket they found lately instead of asking for its marker each time;
    /// a deletion through the endpoint ends that at once, and another storage (a swap)
    /// is never trusted for what this one had.
    @Test func readsTrustABucketLately_butNotPastItsDeletion_norInAnotherStorage() async throws {
        // A trust that cannot run out while the test runs, however busy the machine.
        let s3 = S3Fixture(buckets: S3BucketGate(trust: .seconds(3600)))
        try await s3.makeBucket("photos")
        _ = try await s3.put("photos", "a.jpg", "jpeg")
        #expect(try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "photos", key: "a.jpg")).status == 200)
        #expect(s3.buckets.recentlySeen("photos", in: s3.storage))

        let swapped = InMemoryObjectStorage()
        _ = try await swapped.put("photos/a.jpg", data: Array("other".utf8))
        let other = S3Context(storage: swapped, logger: .disabled, region: s3.region, buckets: s3.buckets)
        let unknown = await s3Error { try await ObjectOperations.getObject(other, s3.request("GET", bucket: "photos", key: "a.jpg")) }
        #expect(unknown?.code == "NoSuchBucket")

        _ = try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "photos", key: "a.jpg"))
        #expect(try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos")).status == 204)
        #expect(!s3.buckets.recentlySeen("photos", in: s3.storage))
        _ = try await s3.storage.put("photos/a.jpg", data: Array("left by the native API".utf8))
        let gone = await s3Error { try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "photos", key: "a.jpg")) }
        #expect(gone?.code == "NoSuchBucket")
    }

    /// Many puts and deletes at once, on the real router's gate: every acknowledged put is
    /// listed when the bucket survives; when it is deleted, no put was acknowledged after
    /// it and none of their objects is left behind.
    @Test(arguments: 0..<20)
    func putsAndADeleteAtOnce_neverLoseAnAcknowledgedObject(_ round: Int) async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("race")
        // Every storage call suspends once, so the requests interleave as over a real backend.
        let context = S3Context(storage: HeldStorage(s3.storage, holding: .nothing), logger: .disabled, region: s3.region, buckets: s3.buckets)
        let outcomes = try await withThrowingTaskGroup(of: (String, Int).self) { group in
            for i in 0..<25 {
                // The delete starts among the puts, `round` of them before it.
                if i == round {
                    group.addTask {
                        do {
                            return ("delete", try await BucketOperations.deleteBucket(context, s3.request("DELETE", bucket: "race")).status)
                        } catch let error as S3Error {
                            return ("delete", error.status)
                        }
                    }
                }
                group.addTask {
                    do {
                        let answer = try await ObjectOperations.putObject(context, s3.request("PUT", bucket: "race", key: "k\(i)", body: [UInt8(i)]))
                        return ("k\(i)", answer.status)
                    } catch let error as S3Error {
                        return ("k\(i)", error.status)
                    }
                }
            }
            var all: [String: Int] = [:]
            for try await (name, status) in group { all[name] = status }
            return all
        }
        let acknowledged = Set(outcomes.filter { $0.key != "delete" && $0.value == 200 }.map(\.key))
        let stored = Set(try await s3.storage.list(prefix: "race/").map { String($0.key.dropFirst("race/".count)) })
        if outcomes["delete"] == 204 {
            #expect(try await !s3.storage.exists(S3Namespace.markerKey(bucket: "race")))
            #expect(acknowledged.isEmpty, "deleted, yet these puts were acknowledged: \(acknowledged.sorted())")
            #expect(stored.isEmpty, "deleted, yet these objects are left: \(stored.sorted())")
        } else {
            #expect(outcomes["delete"] == 409)
            #expect(stored == acknowledged)
        }
        // Every put was answered 200 or NoSuchBucket, nothing else.
        #expect(outcomes.filter { $0.key != "delete" }.allSatisfy { $0.value == 200 || $0.value == 404 }, "\(outcomes)")
    }
}

/// InMemoryObjectStorage with one call held: the call to `holding` waits, once it has
/// told ``reached()``, until ``release()``. Every call suspends once first, as a call
/// to a real backend would, so that requests run at once interleave.
final class HeldStorage: ObjectStorage, Sendable {
    enum Call: Sendable, Equatable { case put(String), delete(String), nothing }

    let base: InMemoryObjectStorage
    let holding: Call
    private let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation
    private let gate = Mutex<(open: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

    init(_ base: InMemoryObjectStorage, holding: Call) {
        self.base = base
        self.holding = holding
        (arrivals, arrived) = AsyncStream.makeStream()
    }

    /// Returns once the held call has come.
    func reached() async {
        for await _ in arrivals { return }
    }

    func release() {
        let waiting = gate.withLock { state -> CheckedContinuation<Void, Never>? in
            state.open = true
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume()
    }

    private func hold(_ call: Call) async {
        await Task.yield()
        guard call == holding else { return }
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            let open = gate.withLock { state -> Bool in
                if !state.open { state.waiting = resume }
                return state.open
            }
            arrived.yield()
            if open { resume.resume() }
        }
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        await hold(.put(key))
        return try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }
    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        // A body takes a while to arrive: the other requests move on meanwhile.
        for _ in 0..<8 { await Task.yield() }
        await hold(.put(key))
        return try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }
    func get(_ key: String) async throws -> StoredObject {
        await Task.yield()
        return try await base.get(key)
    }
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        await Task.yield()
        return try await base.get(key, range: range)
    }
    func head(_ key: String) async throws -> ObjectInfo {
        await Task.yield()
        return try await base.head(key)
    }
    func delete(_ key: String) async throws {
        await hold(.delete(key))
        try await base.delete(key)
    }
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        await Task.yield()
        return try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
