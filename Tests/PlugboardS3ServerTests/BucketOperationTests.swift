import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

@Suite struct BucketOperationTests {
    @Test func createBucket_storesTheMarkerAndAnswersLocation() async throws {
        let s3 = S3Fixture()
        let response = try await s3.makeBucket("photos")
        #expect(response.status == 200)
        #expect(response.header("Location") == "/photos")
        let marker = try await s3.storage.head("_plugboard-s3/buckets/photos")
        #expect(marker.size == 0)
    }

    @Test func createBucket_twice_isBucketAlreadyOwnedByYou() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let error = await s3Error { try await s3.makeBucket("photos") }
        #expect(error?.code == "BucketAlreadyOwnedByYou")
        #expect(error?.status == 409)
        #expect(error?.fields.first { $0.0 == "BucketName" }?.1 == "photos")
    }

    /// AWS's us-east-1 answers the owner's re-creation 200 (its legacy rule); the
    /// fixture's us-west-2 above answers 409, as every other region does.
    @Test func createBucket_twice_inUSEast1_is200() async throws {
        let s3 = S3Fixture()
        let east = S3Context(storage: s3.storage, logger: .disabled, region: "us-east-1", buckets: s3.buckets)
        _ = try await BucketOperations.createBucket(east, s3.request("PUT", bucket: "photos"))
        let again = try await BucketOperations.createBucket(east, s3.request("PUT", bucket: "photos"))
        #expect(again.status == 200)
        #expect(try await s3.storage.list(prefix: S3Namespace.bucketMarkerPrefix).map(\.key) == [S3Namespace.markerKey(bucket: "photos")])
    }

    @Test func createBucket_racing_exactlyOneWins() async throws {
        let s3 = S3Fixture()
        let results = await withTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    do { _ = try await s3.makeBucket("race"); return "ok" } catch let e as S3Error { return e.code } catch { return "\(error)" }
                }
            }
            var all: [String] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.filter { $0 == "ok" }.count == 1)
        #expect(results.filter { $0 == "BucketAlreadyOwnedByYou" }.count == 7)
    }

    @Test func createBucket_refusesInvalidNames() async throws {
        let s3 = S3Fixture()
        let error = await s3Error { try await s3.makeBucket("Bad_Name") }
        #expect(error?.code == "InvalidBucketName")
        #expect(error?.status == 400)
        #expect(try await s3.storage.list(prefix: "").isEmpty)
    }

    @Test func createBucket_locationConstraint_mustBeTheRegion() async throws {
        let s3 = S3Fixture()
        let ours = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>us-west-2</LocationConstraint></CreateBucketConfiguration>"
        let ok = try await BucketOperations.createBucket(s3.context, s3.request("PUT", bucket: "here", body: Array(ours.utf8)))
        #expect(ok.status == 200)
        let empty = "<CreateBucketConfiguration><LocationConstraint/></CreateBucketConfiguration>"
        #expect(try await BucketOperations.createBucket(s3.context, s3.request("PUT", bucket: "empty", body: Array(empty.utf8))).status == 200)

        let theirs = "<CreateBucketConfiguration><LocationConstraint>eu-central-1</LocationConstraint></CreateBucketConfiguration>"
        let error = await s3Error { try await BucketOperations.createBucket(s3.context, s3.request("PUT", bucket: "there", body: Array(theirs.utf8))) }
        #expect(error?.code == "InvalidLocationConstraint")
        #expect(error?.status == 400)
        #expect(error?.message.contains("us-west-2") == true)
        #expect(error?.message.contains("eu-central-1") == true)
        #expect(try await s3.storage.exists("_plugboard-s3/buckets/there") == false)

        let wrongRoot = "<Delete/>"
        let malformed = await s3Error { try await BucketOperations.createBucket(s3.context, s3.request("PUT", bucket: "root", body: Array(wrongRoot.utf8))) }
        #expect(malformed?.code == "MalformedXML")
    }

    @Test func listBuckets_namesEveryBucketWithItsCreationDate() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("beta")
        s3.clock.advance(60)
        try await s3.makeBucket("alpha")
        let root = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil)).document()
        #expect(root.name == "ListAllMyBucketsResult")
        #expect(root.child("Owner")?.text("ID") == "plugboard")
        #expect(root.child("Owner")?.text("DisplayName") == "plugboard")
        let buckets = root.child("Buckets")?.children("Bucket") ?? []
        #expect(buckets.map { $0.text("Name") } == ["alpha", "beta"])
        #expect(buckets.map { $0.text("CreationDate") } == ["2023-11-14T22:14:20.000Z", "2023-11-14T22:13:20.000Z"])
    }

    @Test func listBuckets_followsEveryStoragePage() async throws {
        let s3 = S3Fixture()
        for i in 0..<1005 { try await s3.storage.put("_plugboard-s3/buckets/b\(1000 + i)", data: []) }
        let root = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil)).document()
        let names = root.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } ?? []
        #expect(names.count == 1005)
        #expect(names.first == "b1000")
        #expect(names.last == "b2004")
    }

    @Test func listBuckets_pagedWithMaxBucketsPrefixAndToken() async throws {
        let s3 = S3Fixture()
        for name in ["alpha", "beta", "bravo", "charlie"] { try await s3.makeBucket(name) }
        let first = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [("max-buckets", "2")])).document()
        #expect(first.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } == ["alpha", "beta"])
        #expect(first.child("Buckets")?.children("Bucket").first?.text("BucketRegion") == "us-west-2")
        let token = try #require(first.text("ContinuationToken"))
        let second = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [("max-buckets", "2"), ("continuation-token", token)])).document()
        #expect(second.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } == ["bravo", "charlie"])
        #expect(second.child("ContinuationToken") == nil)

        let b = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [("prefix", "b")])).document()
        #expect(b.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } == ["beta", "bravo"])
        #expect(b.text("Prefix") == "b")

        for bad in [("max-buckets", "0"), ("max-buckets", "10001"), ("max-buckets", "x"), ("continuation-token", "bm9wZQ")] {
            let error = await s3Error { try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [bad])) }
            #expect(error?.code == "InvalidArgument", "\(bad)")
        }
    }

    @Test func headBucket_answersTheRegion_orNoSuchBucket() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let found = try await BucketOperations.headBucket(s3.context, s3.request("HEAD", bucket: "photos"))
        #expect(found.status == 200)
        #expect(found.header("x-amz-bucket-region") == "us-west-2")
        let error = await s3Error { try await BucketOperations.headBucket(s3.context, s3.request("HEAD", bucket: "nothing")) }
        #expect(error?.code == "NoSuchBucket")
        #expect(error?.status == 404)
    }

    @Test func deleteBucket_refusesWhileObjectsRemain_andAbortsItsUploads() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        try await s3.put("photos", "a.jpg", "jpeg")
        let full = await s3Error { try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos")) }
        #expect(full?.code == "BucketNotEmpty")
        #expect(full?.status == 409)
        #expect(full?.message.contains("a.jpg") == true)

        // An upload in progress does not keep the bucket: it is aborted, as S3 does.
        _ = try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "photos", key: "a.jpg"))
        let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "photos", key: "big.bin", query: [("uploads", "")]))
        let id = try #require(try created.document().text("UploadId"))
        _ = try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "photos", key: "big.bin", query: [("partNumber", "1"), ("uploadId", id)], body: [1, 2]))
        #expect(try await !s3.storage.list(prefix: "_plugboard-s3/uploads/photos/").isEmpty)

        // Another bucket's upload, and a bucket whose name starts with this one's, are left.
        try await s3.storage.put("_plugboard-s3/uploads/photos2/UPLOAD2/upload", data: [])
        try await s3.makeBucket("photos2")
        try await s3.put("photos2", "b", "b")
        let deleted = try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos"))
        #expect(deleted.status == 204)
        #expect(try await s3.storage.exists("_plugboard-s3/buckets/photos") == false)
        #expect(try await s3.storage.list(prefix: "_plugboard-s3/uploads/photos/").isEmpty)
        #expect(try await s3.storage.exists("_plugboard-s3/uploads/photos2/UPLOAD2/upload"))
        #expect(try await s3.storage.exists("photos2/b"))
        let again = await s3Error { try await BucketOperations.deleteBucket(s3.context, s3.request("DELETE", bucket: "photos")) }
        #expect(again?.code == "NoSuchBucket")

        // A bucket made again under the name finds none of the old upload.
        try await s3.makeBucket("photos")
        let part = await s3Error { try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "photos", key: "big.bin", query: [("partNumber", "2"), ("uploadId", id)], body: [3])) }
        #expect(part?.code == "NoSuchUpload")
    }

    @Test func getBucketLocation_writesTheRegion_emptyForUSEast1() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        let response = try await BucketOperations.getBucketLocation(s3.context, s3.request("GET", bucket: "photos", query: [("location", "")]))
        let root = try response.document()
        #expect(root.name == "LocationConstraint")
        #expect(root.text == "us-west-2")

        let east = S3Context(storage: s3.storage, logger: .disabled, region: "us-east-1", buckets: S3BucketGate())
        let eastRoot = try await BucketOperations.getBucketLocation(east, s3.request("GET", bucket: "photos")).document()
        #expect(eastRoot.name == "LocationConstraint")
        #expect(eastRoot.text == "")
        #expect(eastRoot.children.isEmpty)

        let missing = await s3Error { try await BucketOperations.getBucketLocation(s3.context, s3.request("GET", bucket: "nope")) }
        #expect(missing?.code == "NoSuchBucket")
    }
}
