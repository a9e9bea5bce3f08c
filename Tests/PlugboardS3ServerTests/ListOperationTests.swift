import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import PlugboardTesting
import Synchronization
import Testing

@Suite struct ListOperationTests {
    /// A bucket "bkt" (beside "bkt2", whose objects it must not list) with `keys`, each holding its own name.
    static func bucket(_ keys: [String]) async throws -> S3Fixture {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await s3.makeBucket("bkt2")
        try await s3.storage.put("bkt2/not-mine", data: [1])
        for key in keys { try await s3.storage.put("bkt/" + key, data: Array(key.utf8)) }
        return s3
    }

    static func v2(_ s3: S3Fixture, _ query: [(String, String)]) async throws -> S3XMLElement {
        try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("list-type", "2")] + query)).document()
    }

    static func keys(_ root: S3XMLElement) -> [String] { root.children("Contents").compactMap { $0.text("Key") } }
    static func prefixes(_ root: S3XMLElement) -> [String] { root.children("CommonPrefixes").compactMap { $0.text("Prefix") } }

    @Test func v2_listsTheBucketsKeysWithTheirFields() async throws {
        let s3 = try await Self.bucket(["a", "c/d"])
        try await s3.storage.put("bkt/multi", data: Array("x".utf8), metadata: ["plugboard-s3-etag": "0123-3"])
        let root = try await Self.v2(s3, [])
        #expect(root.name == "ListBucketResult")
        #expect(root.text("Name") == "bkt")
        #expect(root.text("Prefix") == "")
        #expect(root.text("KeyCount") == "3")
        #expect(root.text("MaxKeys") == "1000")
        #expect(root.text("IsTruncated") == "false")
        #expect(root.child("NextContinuationToken") == nil)
        #expect(Self.keys(root) == ["a", "c/d", "multi"])
        let first = try #require(root.children("Contents").first)
        #expect(first.text("LastModified") == "2023-11-14T22:13:20.000Z")
        #expect(first.text("ETag") == "\"0cc175b9c0f1b6a831c399e269772661\"")
        #expect(first.text("Size") == "1")
        #expect(first.text("StorageClass") == "STANDARD")
        #expect(first.child("Owner") == nil)
        #expect(root.children("Contents").last?.text("ETag") == "\"0123-3\"")

        let owned = try await Self.v2(s3, [("fetch-owner", "true")])
        #expect(owned.children("Contents").first?.child("Owner")?.text("ID") == "plugboard")
    }

    @Test func v2_delimiterFoldsCommonPrefixesOnce() async throws {
        let s3 = try await Self.bucket(["photos/2024/a.jpg", "photos/2024/b.jpg", "photos/2025/c.jpg", "photos/top.jpg",
                                        "photos/", "readme", "zeta/x"])
        let root = try await Self.v2(s3, [("prefix", "photos/"), ("delimiter", "/")])
        #expect(Self.keys(root) == ["photos/", "photos/top.jpg"])
        #expect(Self.prefixes(root) == ["photos/2024/", "photos/2025/"])
        #expect(root.text("KeyCount") == "4")
        #expect(root.text("Delimiter") == "/")
        #expect(root.text("Prefix") == "photos/")

        let top = try await Self.v2(s3, [("delimiter", "/")])
        #expect(Self.keys(top) == ["readme"])
        #expect(Self.prefixes(top) == ["photos/", "zeta/"])
    }

    @Test func v2_commonPrefixesCountTowardMaxKeys_andPagesResumeAfterThem() async throws {
        let s3 = try await Self.bucket(["a/1", "a/2", "a/3", "b/1", "c", "d/1", "d/2"])
        var seen: [String] = []
        var token: String?
        var answers = 0
        repeat {
            var query = [("delimiter", "/"), ("max-keys", "2")]
            if let token { query.append(("continuation-token", token)) }
            let root = try await Self.v2(s3, query)
            #expect(Int(root.text("KeyCount") ?? "") ?? -1 <= 2)
            seen += root.children.compactMap { element in
                element.name == "Contents" ? element.text("Key") : element.name == "CommonPrefixes" ? element.text("Prefix") : nil
            }
            token = root.text("NextContinuationToken")
            #expect((root.text("IsTruncated") == "true") == (token != nil))
            answers += 1
        } while token != nil && answers < 10
        #expect(seen == ["a/", "b/", "c", "d/"])
        #expect(answers == 2)
    }

    @Test func v2_paginatesAcrossStoragePages() async throws {
        let keys = (0..<2100).map { "k" + String(100_000 + $0) }
        let s3 = try await Self.bucket(keys)
        var listed: [String] = []
        var token: String?
        var answers = 0
        repeat {
            var query = [("max-keys", "700")]
            if let token { query.append(("continuation-token", token)) }
            let root = try await Self.v2(s3, query)
            listed += Self.keys(root)
            token = root.text("NextContinuationToken")
            answers += 1
        } while token != nil && answers < 20
        #expect(answers == 3)
        #expect(listed == keys)

        // The default page of 1,000 crosses the storage's page of 1,000 exactly at the end.
        let first = try await Self.v2(s3, [])
        #expect(Self.keys(first).count == 1000)
        #expect(first.text("IsTruncated") == "true")
        let second = try await Self.v2(s3, [("continuation-token", try #require(first.text("NextContinuationToken")))])
        #expect(Self.keys(second).first == "k101000")
        #expect(Self.keys(second).count == 1000)
        let third = try await Self.v2(s3, [("continuation-token", try #require(second.text("NextContinuationToken")))])
        #expect(Self.keys(third) == Array(keys[2000...]))
        #expect(third.text("IsTruncated") == "false")
    }

    @Test func v2_delimiterOverManyStoragePages_foldsOnePrefixOnce() async throws {
        let keys = (0..<1500).map { "dir/" + String(10_000 + $0) } + ["file"]
        let s3 = try await Self.bucket(keys)
        let root = try await Self.v2(s3, [("delimiter", "/"), ("max-keys", "1")])
        #expect(Self.prefixes(root) == ["dir/"])
        #expect(root.text("IsTruncated") == "true")
        let next = try await Self.v2(s3, [("delimiter", "/"), ("max-keys", "1"), ("continuation-token", try #require(root.text("NextContinuationToken")))])
        #expect(Self.keys(next) == ["file"])
        #expect(Self.prefixes(next).isEmpty)
        #expect(next.text("IsTruncated") == "false")
    }

    @Test func v2_startAfter() async throws {
        let s3 = try await Self.bucket(["a", "b", "c", "d"])
        let root = try await Self.v2(s3, [("start-after", "b")])
        #expect(Self.keys(root) == ["c", "d"])
        #expect(root.text("StartAfter") == "b")
        let between = try await Self.v2(s3, [("start-after", "bz"), ("max-keys", "1")])
        #expect(Self.keys(between) == ["c"])
        let resumed = try await Self.v2(s3, [("start-after", "bz"), ("continuation-token", try #require(between.text("NextContinuationToken")))])
        #expect(Self.keys(resumed) == ["d"])
        let past = try await Self.v2(s3, [("start-after", "zzz")])
        #expect(Self.keys(past).isEmpty)
        #expect(past.text("KeyCount") == "0")
    }

    @Test func v2_encodingTypeURL() async throws {
        let s3 = try await Self.bucket(["a b&c/d+e", "plain"])
        let root = try await Self.v2(s3, [("encoding-type", "url"), ("delimiter", "/"), ("prefix", "a b")])
        #expect(root.text("EncodingType") == "url")
        #expect(root.text("Prefix") == "a+b")
        #expect(Self.prefixes(root) == ["a+b%26c/"])
        let flat = try await Self.v2(s3, [("encoding-type", "url"), ("start-after", "a ")])
        #expect(Self.keys(flat) == ["a+b%26c/d%2Be", "plain"])
        #expect(flat.text("StartAfter") == "a+")
        let raw = try await Self.v2(s3, [])
        #expect(Self.keys(raw) == ["a b&c/d+e", "plain"])
    }

    @Test func anEmptyContinuationTokenOrMarker_isNone_andEchoedAsSent() async throws {
        let s3 = try await Self.bucket(["a", "b"])
        let v2 = try await Self.v2(s3, [("continuation-token", ""), ("start-after", "")])
        #expect(Self.keys(v2) == ["a", "b"])
        // AWS answers <ContinuationToken></ContinuationToken> and <StartAfter></StartAfter>.
        #expect(Self.exact(v2, "ContinuationToken") == "")
        #expect(Self.exact(v2, "StartAfter") == "")
        let plain = try await Self.v2(s3, [])
        #expect(plain.child("ContinuationToken") == nil)
        #expect(plain.child("StartAfter") == nil)
        let paged = try await Self.v2(s3, [("continuation-token", ""), ("max-keys", "1")])
        #expect(Self.keys(paged) == ["a"])
        let next = try #require(paged.text("NextContinuationToken"))
        #expect(Self.keys(try await Self.v2(s3, [("continuation-token", next)])) == ["b"])
        // Beside start-after, an empty token leaves start-after in charge.
        #expect(Self.keys(try await Self.v2(s3, [("continuation-token", ""), ("start-after", "a")])) == ["b"])

        let versions = try await ListOperations.listObjectVersions(s3.context, s3.request("GET", bucket: "bkt", query: [
            ("versions", ""), ("key-marker", ""), ("version-id-marker", ""),
        ])).document()
        #expect(versions.children("Version").compactMap { $0.text("Key") } == ["a", "b"])
        let v1 = try await ListOperations.listObjectsV1(s3.context, s3.request("GET", bucket: "bkt", query: [("marker", "")])).document()
        #expect(Self.keys(v1) == ["a", "b"])

        let buckets = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [("continuation-token", "")])).document()
        #expect(buckets.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } == ["bkt", "bkt2"])
        let page = try await BucketOperations.listBuckets(s3.context, s3.request("GET", bucket: nil, query: [
            ("continuation-token", ""), ("max-buckets", "1"),
        ])).document()
        #expect(page.child("Buckets")?.children("Bucket").compactMap { $0.text("Name") } == ["bkt"])
    }

    /// The exact text of the first child `name` (``S3XMLElement/text(_:)`` trims it).
    static func exact(_ root: S3XMLElement, _ name: String) -> String? { root.child(name)?.text }

    @Test func encodingTypeURL_encodesExactlyWhatTheSDKsDecode() async throws {
        // A newline, a space and non-ASCII in keys, prefix, delimiter and markers.
        let s3 = try await Self.bucket(["n\ne é/1", "n\ne é/2", "n\ne z", "n\ne ü"])
        let url = ("encoding-type", "url")
        let prefix = ("prefix", "n\ne ")

        // V1: Delimiter, Marker, NextMarker, Key and CommonPrefixes' Prefix; Prefix as sent.
        let v1 = try await ListOperations.listObjectsV1(s3.context, s3.request("GET", bucket: "bkt", query: [
            url, prefix, ("delimiter", "é"), ("marker", "n\ne a"), ("max-keys", "2"),
        ])).document()
        #expect(Self.exact(v1, "Prefix") == "n\ne ")
        #expect(v1.text("Delimiter") == "%C3%A9")
        #expect(v1.text("Marker") == "n%0Ae+a")
        #expect(Self.prefixes(v1) == ["n%0Ae+%C3%A9"])
        #expect(Self.keys(v1) == ["n%0Ae+z"])
        #expect(v1.text("NextMarker") == "n%0Ae+%C3%A9")
        #expect(v1.text("EncodingType") == "url")

        // V2: Delimiter, Prefix, StartAfter, Key and CommonPrefixes' Prefix; tokens as issued.
        let v2 = try await Self.v2(s3, [url, prefix, ("delimiter", "é"), ("start-after", "n\ne a"), ("max-keys", "2")])
        #expect(v2.text("Prefix") == "n%0Ae+")
        #expect(v2.text("Delimiter") == "%C3%A9")
        #expect(v2.text("StartAfter") == "n%0Ae+a")
        #expect(Self.prefixes(v2) == ["n%0Ae+%C3%A9"])
        #expect(Self.keys(v2) == ["n%0Ae+z"])
        let token = try #require(v2.text("NextContinuationToken"))
        let rest = try await Self.v2(s3, [url, prefix, ("delimiter", "é"), ("continuation-token", token)])
        #expect(rest.text("ContinuationToken") == token)
        #expect(Self.keys(rest) == ["n%0Ae+%C3%BC"])

        // ListObjectVersions: KeyMarker, NextKeyMarker, Prefix, Delimiter, Key and CommonPrefixes' Prefix.
        let versions = try await ListOperations.listObjectVersions(s3.context, s3.request("GET", bucket: "bkt", query: [
            ("versions", ""), url, prefix, ("delimiter", "é"), ("key-marker", "n\ne a"), ("max-keys", "2"),
        ])).document()
        #expect(versions.text("Prefix") == "n%0Ae+")
        #expect(versions.text("Delimiter") == "%C3%A9")
        #expect(versions.text("KeyMarker") == "n%0Ae+a")
        #expect(versions.text("NextKeyMarker") == "n%0Ae+%C3%A9")
        #expect(versions.text("VersionIdMarker") == "")
        #expect(versions.children("Version").compactMap { $0.text("Key") } == ["n%0Ae+z"])
        #expect(Self.prefixes(versions) == ["n%0Ae+%C3%A9"])

        // Without encoding-type every element is the text itself.
        let raw = try await ListOperations.listObjectsV1(s3.context, s3.request("GET", bucket: "bkt", query: [prefix, ("delimiter", "é")])).document()
        #expect(Self.exact(raw, "Prefix") == "n\ne ")
        #expect(raw.children("Contents").compactMap { $0.child("Key")?.text } == ["n\ne z", "n\ne ü"])
    }

    @Test func keysXMLCannotCarry_areListedParseably_andExactlyWithEncodingTypeURL() async throws {
        let key = "c\u{01}t\u{1F}l\u{FFFE}x\u{FFFF}"
        let s3 = try await Self.bucket([key])
        let response = try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("list-type", "2")]))
        // Nothing XML 1.0 refuses: no C0 control but tab and LF, no U+FFFE or U+FFFF.
        let text = try #require(String(validating: response.body, as: UTF8.self))
        #expect(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t" && $0 != "\n") || $0.value == 0xFFFE || $0.value == 0xFFFF })
        #expect(Self.keys(try response.document()) == ["c\u{FFFD}t\u{FFFD}l\u{FFFD}x\u{FFFD}"])
        let encoded = try await Self.v2(s3, [("encoding-type", "url")])
        #expect(Self.keys(encoded) == ["c%01t%1Fl%EF%BF%BEx%EF%BF%BF"])
    }

    @Test func v2_refusals() async throws {
        let s3 = try await Self.bucket(["a"])
        let token = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("continuation-token", "bm90LW91cnM")])) }
        #expect(token?.code == "InvalidArgument")
        #expect(token?.message.contains("continuation token") == true)
        let first = try await Self.v2(s3, [("max-keys", "0")])
        #expect(first.child("NextContinuationToken") == nil)
        try await s3.storage.put("bkt/z", data: [])
        let page = try await Self.v2(s3, [("max-keys", "1")])
        let issued = try #require(page.text("NextContinuationToken"))
        let otherPrefix = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("continuation-token", issued), ("prefix", "z")])) }
        #expect(otherPrefix?.code == "InvalidArgument")
        #expect(otherPrefix?.message.contains("another bucket, prefix or delimiter") == true)
        let otherDelimiter = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("continuation-token", issued), ("delimiter", "/")])) }
        #expect(otherDelimiter?.code == "InvalidArgument")
        let same = try await Self.v2(s3, [("continuation-token", issued)])
        #expect(Self.keys(same) == ["z"])
        let garbage = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("continuation-token", "!!")])) }
        #expect(garbage?.code == "InvalidArgument")
        let maxKeys = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("max-keys", "-1")])) }
        #expect(maxKeys?.code == "InvalidArgument")
        let encoding = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "bkt", query: [("encoding-type", "base64")])) }
        #expect(encoding?.code == "InvalidArgument")
        let bucket = await s3Error { try await ListOperations.listObjectsV2(s3.context, s3.request("GET", bucket: "nope", query: [])) }
        #expect(bucket?.code == "NoSuchBucket")

        let zero = try await Self.v2(s3, [("max-keys", "0")])
        #expect(zero.text("KeyCount") == "0")
        #expect(zero.text("MaxKeys") == "0")
        let many = try await Self.v2(s3, [("max-keys", "5000")])
        #expect(many.text("MaxKeys") == "1000")
    }

    @Test func v1_markerAndNextMarker() async throws {
        let s3 = try await Self.bucket(["a/1", "a/2", "b", "c/1", "d"])
        func v1(_ query: [(String, String)]) async throws -> S3XMLElement {
            try await ListOperations.listObjectsV1(s3.context, s3.request("GET", bucket: "bkt", query: query)).document()
        }
        let flat = try await v1([("max-keys", "2")])
        #expect(Self.keys(flat) == ["a/1", "a/2"])
        #expect(flat.text("IsTruncated") == "true")
        #expect(flat.child("NextMarker") == nil)
        #expect(flat.text("Marker") == "")
        #expect(flat.children("Contents").first?.child("Owner")?.text("DisplayName") == "plugboard")
        let rest = try await v1([("marker", "a/2")])
        #expect(Self.keys(rest) == ["b", "c/1", "d"])
        #expect(rest.text("Marker") == "a/2")
        #expect(rest.text("IsTruncated") == "false")

        var seen: [String] = []
        var marker = ""
        for _ in 0..<10 {
            let page = try await v1([("delimiter", "/"), ("max-keys", "1"), ("marker", marker)])
            seen += Self.keys(page) + Self.prefixes(page)
            guard page.text("IsTruncated") == "true" else { break }
            marker = try #require(page.text("NextMarker"))
        }
        #expect(seen == ["a/", "b", "c/", "d"])
    }

    @Test func listObjectVersions_everyObjectIsItsNullVersion() async throws {
        let s3 = try await Self.bucket(["a", "b/1", "c"])
        func versions(_ query: [(String, String)]) async throws -> S3XMLElement {
            try await ListOperations.listObjectVersions(s3.context, s3.request("GET", bucket: "bkt", query: [("versions", "")] + query)).document()
        }
        let root = try await versions([("max-keys", "2")])
        #expect(root.name == "ListVersionsResult")
        let list = root.children("Version")
        #expect(list.compactMap { $0.text("Key") } == ["a", "b/1"])
        #expect(list.allSatisfy { $0.text("VersionId") == "null" && $0.text("IsLatest") == "true" })
        #expect(list.first?.text("ETag") == "\"0cc175b9c0f1b6a831c399e269772661\"")
        #expect(list.first?.text("Size") == "1")
        #expect(root.text("IsTruncated") == "true")
        #expect(root.text("NextKeyMarker") == "b/1")
        #expect(root.text("NextVersionIdMarker") == "null")
        let rest = try await versions([("key-marker", "b/1"), ("version-id-marker", "null")])
        #expect(rest.children("Version").compactMap { $0.text("Key") } == ["c"])
        #expect(rest.text("IsTruncated") == "false")
        #expect(rest.text("KeyMarker") == "b/1")

        let folded = try await versions([("delimiter", "/")])
        #expect(folded.children("Version").compactMap { $0.text("Key") } == ["a", "c"])
        #expect(Self.prefixes(folded) == ["b/"])

        let bad = await s3Error { try await ListOperations.listObjectVersions(s3.context, s3.request("GET", bucket: "bkt", query: [("key-marker", "a"), ("version-id-marker", "3HL4kqtJlcpXroDTDmJ")])) }
        #expect(bad?.code == "InvalidArgument")
        let alone = await s3Error { try await ListOperations.listObjectVersions(s3.context, s3.request("GET", bucket: "bkt", query: [("version-id-marker", "null")])) }
        #expect(alone?.code == "InvalidArgument")
    }
}

/// A storage whose tokens are its own: ListingRequest's scheme is refused, so start-after
/// must be found by walking from the prefix's start.
final class OwnTokenStorage: ForwardingStorage {
    let base = InMemoryObjectStorage()

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        var innerToken: String?
        if let continuationToken {
            guard continuationToken.hasPrefix("own:") else {
                throw PlugboardError(.storageInvalidArgument, "invalid continuation token")
            }
            innerToken = String(continuationToken.dropFirst(4))
        }
        var page = try await base.list(prefix: prefix, limit: min(limit, 3), continuationToken: innerToken)
        page.nextContinuationToken = page.nextContinuationToken.map { "own:" + $0 }
        // Listings of this storage carry no metadata.
        page.objects = page.objects.map {
            ObjectInfo(key: $0.key, size: $0.size, etag: $0.etag, lastModified: $0.lastModified, unknown: [.contentType, .metadata])
        }
        return page
    }
}

@Suite struct ListOverOwnTokensTests {
    @Test func startAfter_fallsBackToWalking_andMultipartETagsAreHeaded() async throws {
        let storage = OwnTokenStorage()
        let context = S3Context(storage: storage, logger: .disabled, region: "us-west-2", buckets: S3BucketGate())
        let s3 = S3Fixture()
        _ = try await BucketOperations.createBucket(context, s3.request("PUT", bucket: "bkt"))
        for key in ["a", "b", "c", "d", "e", "f", "g"] { _ = try await storage.put("bkt/" + key, data: Array(key.utf8), contentType: nil, metadata: [:]) }
        _ = try await storage.put("bkt/h", data: [1], contentType: nil, metadata: ["plugboard-s3-etag": "feed-2"])
        let root = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "bkt", query: [("start-after", "d"), ("max-keys", "3")])).document()
        #expect(ListOperationTests.keys(root) == ["e", "f", "g"])
        #expect(root.text("IsTruncated") == "true")
        let rest = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "bkt", query: [("continuation-token", try #require(root.text("NextContinuationToken")))])).document()
        #expect(ListOperationTests.keys(rest) == ["h"])
        #expect(rest.children("Contents").first?.text("ETag") == "\"feed-2\"")
    }
}

/// InMemoryObjectStorage, counting the listing pages asked for.
final class CountingStorage: ForwardingStorage {
    let base = InMemoryObjectStorage()
    private let lists = Atomic<Int>(0)
    var listCalls: Int { lists.load(ordering: .relaxed) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        lists.add(1, ordering: .relaxed)
        return try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}

@Suite struct BoundedListingTests {
    @Test func theWalkStopsAtMaxKeys_andStartAfterJumpsThroughTheStoragesTokens() async throws {
        let storage = CountingStorage()
        let context = S3Context(storage: storage, logger: .disabled, region: "us-west-2", buckets: S3BucketGate())
        let s3 = S3Fixture()
        _ = try await BucketOperations.createBucket(context, s3.request("PUT", bucket: "bkt"))
        for i in 0..<2100 { _ = try await storage.put("bkt/k" + String(100_000 + i), data: [], contentType: nil, metadata: [:]) }

        let before = storage.listCalls
        let small = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "bkt", query: [("max-keys", "5")])).document()
        #expect(ListOperationTests.keys(small) == ["k100000", "k100001", "k100002", "k100003", "k100004"])
        #expect(storage.listCalls - before == 1)

        let middle = storage.listCalls
        let after = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "bkt", query: [("start-after", "k102050")])).document()
        #expect(ListOperationTests.keys(after).first == "k102051")
        #expect(ListOperationTests.keys(after).count == 49)
        #expect(storage.listCalls - middle == 1)

        let resumed = storage.listCalls
        let next = try await ListOperations.listObjectsV2(context, s3.request("GET", bucket: "bkt", query: [
            ("max-keys", "3"), ("continuation-token", try #require(small.text("NextContinuationToken")))])).document()
        #expect(ListOperationTests.keys(next) == ["k100005", "k100006", "k100007"])
        #expect(storage.listCalls - resumed == 1)
    }
}
