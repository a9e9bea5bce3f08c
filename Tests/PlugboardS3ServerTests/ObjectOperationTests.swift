import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

@Suite struct ObjectOperationTests {
    static let helloMD5 = "\"5d41402abc4b2a76b9719d911017c592\"" // "hello"

    @Test func putObject_storesUnderBucketSlashKey_withTypeMetadataAndStoredHeaders() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let response = try await s3.put("docs", "a/b.txt", "hello", headers: [
            ("Content-Type", "text/plain"), ("x-amz-meta-owner", "ann"), ("Cache-Control", "max-age=60"),
            ("Content-Disposition", "attachment"), ("x-amz-checksum-crc32", "NhCmhg=="),
        ])
        #expect(response.status == 200)
        #expect(response.header("ETag") == Self.helloMD5)
        #expect(response.header("x-amz-checksum-crc32") == "NhCmhg==")
        let stored = try await s3.storage.get("docs/a/b.txt")
        #expect(stored.data == Array("hello".utf8))
        #expect(stored.info.contentType == "text/plain")
        // The checksum the header named is kept with the bytes (GET and HEAD answer it
        // when asked), never as user metadata.
        #expect(stored.info.metadata == ["owner": "ann", "plugboard-s3-cache-control": "max-age=60",
                                         "plugboard-s3-content-disposition": "attachment", "plugboard-s3-checksum": "crc32 FULL_OBJECT NhCmhg=="])
    }

    /// AWS keeps a metadata value that is not US-ASCII and answers it as one RFC 2047
    /// encoded word; plain ASCII comes back as it is.
    @Test func putObject_utf8Metadata_isAnsweredRFC2047Encoded() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("photos")
        _ = try await s3.put("photos", "café.txt", "x", headers: [("x-amz-meta-title", "Café crème"), ("x-amz-meta-plain", "ascii only")])
        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "photos", key: "café.txt"))
        #expect(head.header("x-amz-meta-title") == "=?UTF-8?B?" + Base64.encode(Array("Café crème".utf8)) + "?=")
        #expect(head.header("x-amz-meta-title") == "=?UTF-8?B?Q2Fmw6kgY3LDqG1l?=")
        #expect(head.header("x-amz-meta-plain") == "ascii only")
    }

    @Test func putObject_refusals() async throws {
        let s3 = S3Fixture()
        let noBucket = await s3Error { try await s3.put("nobucket", "k", "x") }
        #expect(noBucket?.code == "NoSuchBucket")
        #expect(noBucket?.status == 404)
        try await s3.makeBucket("docs")
        let long = await s3Error { try await s3.put("docs", String(repeating: "k", count: 1020), "x") }
        #expect(long?.code == "KeyTooLongError")
        let reserved = await s3Error { try await s3.put("docs", "k", "x", headers: [("x-amz-meta-plugboard-s3-etag", "forged")]) }
        #expect(reserved?.code == "InvalidArgument")
        #expect(try await s3.storage.exists("docs/k") == false)
    }

    @Test func putObject_ifNoneMatchStar_createsOnce() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        #expect(try await s3.put("docs", "k", "first", headers: [("If-None-Match", "*")]).status == 200)
        let error = await s3Error { try await s3.put("docs", "k", "second", headers: [("If-None-Match", "*")]) }
        #expect(error?.code == "PreconditionFailed")
        #expect(error?.status == 412)
        #expect(try await s3.storage.data(for: "docs/k") == Array("first".utf8))
    }

    @Test func putObject_ifMatch_replacesOnlyThatVersion() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let first = try await s3.put("docs", "k", "hello")
        let etag = try #require(first.header("ETag"))
        #expect(try await s3.put("docs", "k", "world", headers: [("If-Match", etag)]).status == 200)
        let stale = await s3Error { try await s3.put("docs", "k", "again", headers: [("If-Match", etag)]) }
        #expect(stale?.code == "PreconditionFailed")
        #expect(stale?.message.contains("If-Match") == true)
        #expect(try await s3.storage.data(for: "docs/k") == Array("world".utf8))
        let missing = await s3Error { try await s3.put("docs", "absent", "x", headers: [("If-Match", etag)]) }
        #expect(missing?.code == "NoSuchKey")
    }

    @Test func getObject_answersBodyAndHeaders() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello", headers: [("Content-Type", "text/plain"), ("x-amz-meta-owner", "ann"),
                                                          ("Content-Language", "en")])
        let response = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "k"))
        #expect(response.status == 200)
        #expect(response.body == Array("hello".utf8))
        #expect(response.header("Content-Type") == "text/plain")
        #expect(response.header("ETag") == Self.helloMD5)
        #expect(response.header("Last-Modified") == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(response.header("x-amz-meta-owner") == "ann")
        #expect(response.header("Content-Language") == "en")
        #expect(response.header("Accept-Ranges") == "bytes")
        #expect(response.header("Content-Range") == nil)
    }

    @Test func getObject_missingKey_isNoSuchKey_missingBucket_isNoSuchBucket() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let key = await s3Error { try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "gone")) }
        #expect(key?.code == "NoSuchKey")
        #expect(key?.fields.first { $0.0 == "Key" }?.1 == "gone")
        let bucket = await s3Error { try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "other", key: "gone")) }
        #expect(bucket?.code == "NoSuchBucket")
        let head = await s3Error { try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "gone")) }
        #expect(head?.status == 404)
    }

    @Test func getObject_ranges() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "0123456789")
        func get(_ range: String) async throws -> HTTPResponse {
            try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "k", headers: [("Range", range)]))
        }
        let closed = try await get("bytes=2-4")
        #expect(closed.status == 206)
        #expect(closed.text == "234")
        #expect(closed.header("Content-Range") == "bytes 2-4/10")
        let from = try await get("bytes=7-")
        #expect(from.status == 206)
        #expect(from.text == "789")
        #expect(from.header("Content-Range") == "bytes 7-9/10")
        let suffix = try await get("bytes=-3")
        #expect(suffix.text == "789")
        #expect(suffix.header("Content-Range") == "bytes 7-9/10")
        let clamped = try await get("bytes=8-100")
        #expect(clamped.text == "89")
        #expect(clamped.header("Content-Range") == "bytes 8-9/10")
        let several = try await get("bytes=0-1,4-5")
        #expect(several.status == 200)
        #expect(several.text == "0123456789")
        #expect(several.header("Content-Range") == nil)

        let unsatisfiable = await s3Error { try await get("bytes=10-20") }
        #expect(unsatisfiable?.code == "InvalidRange")
        #expect(unsatisfiable?.status == 416)
        #expect(unsatisfiable?.headers.first { $0.0 == "Content-Range" }?.1 == "bytes */10")

        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k", headers: [("Range", "bytes=2-4")]))
        #expect(head.status == 206)
        #expect(head.headLength == 3)
        #expect(head.header("Content-Range") == "bytes 2-4/10")
    }

    @Test func getObject_conditions_304and412() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello")
        let lastModified = "Tue, 14 Nov 2023 22:13:20 GMT"
        let earlier = "Tue, 14 Nov 2023 22:13:19 GMT"
        func get(_ headers: [(String, String)]) async throws -> HTTPResponse {
            try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "k", headers: headers))
        }
        let notModified = try await get([("If-None-Match", Self.helloMD5)])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.header("ETag") == Self.helloMD5)
        #expect(notModified.header("Last-Modified") == lastModified)
        #expect(try await get([("If-Modified-Since", lastModified)]).status == 304)
        #expect(try await get([("If-Modified-Since", earlier)]).status == 200)
        // If-None-Match wins over If-Modified-Since (RFC 9110 section 13.2.2).
        #expect(try await get([("If-None-Match", "\"other\""), ("If-Modified-Since", lastModified)]).status == 200)
        #expect(try await get([("If-Match", Self.helloMD5)]).status == 200)
        // Unquoted ETags are taken too, as S3 takes them.
        #expect(try await get([("If-Match", "5d41402abc4b2a76b9719d911017c592")]).status == 200)
        // If-Match wins over If-Unmodified-Since.
        #expect(try await get([("If-Match", Self.helloMD5), ("If-Unmodified-Since", earlier)]).status == 200)

        let failedMatch = await s3Error { try await get([("If-Match", "\"0000\"")]) }
        #expect(failedMatch?.code == "PreconditionFailed")
        #expect(failedMatch?.status == 412)
        #expect(failedMatch?.fields.first { $0.0 == "Condition" }?.1 == "If-Match")
        let failedDate = await s3Error { try await get([("If-Unmodified-Since", earlier)]) }
        #expect(failedDate?.fields.first { $0.0 == "Condition" }?.1 == "If-Unmodified-Since")
        // Conditions come before the range: a 304 even for an unsatisfiable range.
        #expect(try await get([("If-None-Match", "*"), ("Range", "bytes=99-")]).status == 304)

        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k", headers: [("If-None-Match", Self.helloMD5)]))
        #expect(head.status == 304)
        let headFailed = await s3Error { try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k", headers: [("If-Match", "\"x\"")])) }
        #expect(headFailed?.status == 412)
    }

    @Test func getObject_multipartETag_isWhatConditionsCompare() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.storage.put("docs/big", data: Array("hello".utf8), metadata: ["plugboard-s3-etag": "abcdef-2"])
        let get = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "big", headers: [("If-None-Match", "\"abcdef-2\"")]))
        #expect(get.status == 304)
        #expect(get.header("ETag") == "\"abcdef-2\"")
    }

    @Test func getObject_responseOverrides() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello", headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-store")])
        let response = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "k", query: [
            ("response-content-type", "application/json"), ("response-content-disposition", "attachment; filename=\"a b.json\""),
            ("response-cache-control", "max-age=5"), ("response-content-encoding", "gzip"),
            ("response-content-language", "fr"), ("response-expires", "Wed, 15 Nov 2023 00:00:00 GMT"),
        ]))
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Content-Disposition") == "attachment; filename=\"a b.json\"")
        #expect(response.header("Cache-Control") == "max-age=5")
        #expect(response.headers.filter { $0.0.lowercased() == "cache-control" }.count == 1)
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(response.header("Content-Language") == "fr")
        #expect(response.header("Expires") == "Wed, 15 Nov 2023 00:00:00 GMT")
        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k", query: [("response-content-type", "image/png")]))
        #expect(head.header("Content-Type") == "image/png")
    }

    @Test func getObject_largeBodyStreams() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let data = (0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await s3.storage.put("docs/large", data: data)
        let response = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "large"))
        #expect(response.stream != nil)
        #expect(response.body.isEmpty)
        #expect(try await response.allBytes() == data)
        let small = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "large", headers: [("Range", "bytes=0-9")]))
        #expect(small.stream == nil)
        #expect(small.body == Array(data[0..<10]))
    }

    @Test func headObject_answersLengthWithoutBody() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello", headers: [("x-amz-meta-a", "1")])
        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k"))
        #expect(head.status == 200)
        #expect(head.headLength == 5)
        #expect(head.body.isEmpty)
        #expect(head.header("ETag") == Self.helloMD5)
        #expect(head.header("x-amz-meta-a") == "1")
    }

    @Test func deleteObject_is204_alsoForAMissingKey() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello")
        #expect(try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "docs", key: "k")).status == 204)
        #expect(try await s3.storage.exists("docs/k") == false)
        #expect(try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "docs", key: "k")).status == 204)
        let noBucket = await s3Error { try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "nope", key: "k")) }
        #expect(noBucket?.code == "NoSuchBucket")
    }

    /// UploadPart answers the checksum it checked, as PutObject does (boto3 compares it).
    @Test func uploadPart_answersTheChecksumItChecked() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "docs", key: "big",
                                                                                                 query: [("uploads", "")]))
        let uploadID = try #require(try S3XMLReader.parse(created.body).text("UploadId"))
        let part = try await MultipartOperations.uploadPart(s3.context, s3.request(
            "PUT", bucket: "docs", key: "big", query: [("partNumber", "1"), ("uploadId", uploadID)],
            headers: [("x-amz-checksum-crc32", "NhCmhg==")], body: Array("hello".utf8)))
        #expect(part.status == 200)
        #expect(part.header("x-amz-checksum-crc32") == "NhCmhg==")
        let plain = try await MultipartOperations.uploadPart(s3.context, s3.request(
            "PUT", bucket: "docs", key: "big", query: [("partNumber", "2"), ("uploadId", uploadID)], body: Array("hello".utf8)))
        #expect(plain.headers.allSatisfy { !$0.0.hasPrefix("x-amz-checksum-") })
    }

    /// `versionId=null` names the one version of an object in an unversioned bucket; any
    /// other version is refused by the router before an operation runs (404
    /// NoSuchVersion, S3RouterTests).
    @Test func versionIdNull_isTheOneVersion() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "k", "hello")
        let null = [("versionId", "null")]
        #expect(try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "k", query: null)).text == "hello")
        #expect(try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "docs", key: "k", query: null)).status == 200)
        #expect(try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "docs", key: "k", query: null)).status == 204)
        #expect(try await s3.storage.exists("docs/k") == false)
    }
}
