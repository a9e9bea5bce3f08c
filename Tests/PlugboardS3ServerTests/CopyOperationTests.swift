import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import PlugboardTesting
import Synchronization
import Testing

@Suite struct CopyOperationTests {
    static func copy(_ s3: S3Fixture, to bucket: String = "dst", _ key: String, source: String,
                     headers: [(String, String)] = []) async throws -> HTTPResponse {
        try await CopyObjectOperation.copyObject(s3.context, s3.request("PUT", bucket: bucket, key: key,
                                                                        headers: [("x-amz-copy-source", source)] + headers))
    }

    static func fixture() async throws -> S3Fixture {
        let s3 = S3Fixture()
        try await s3.makeBucket("src")
        try await s3.makeBucket("dst")
        try await s3.put("src", "dir/a b.txt", "hello", headers: [("Content-Type", "text/plain"), ("x-amz-meta-owner", "ann"),
                                                                   ("Content-Disposition", "inline")])
        s3.clock.advance(30)
        return s3
    }

    @Test func parseCopySource_readsBothFormsEncoded() throws {
        for (header, bucket, key) in [("/src/dir/a%20b.txt", "src", "dir/a b.txt"), ("src/dir%2Fx%3Fy?versionId=null", "src", "dir/x?y"),
                                      ("src/caf%C3%A9+1", "src", "caf\u{E9}+1")] {
            let parsed = try CopyObjectOperation.parseCopySource(header)
            #expect(parsed.bucket == bucket)
            #expect(parsed.key == key)
        }
        for bad in ["src", "/src/", "//key", "src/%zz", "src/%FF", "src/k?versionId=abc", "src/k?partNumber=1"] {
            #expect(throws: S3Error.self, "\(bad)") { try CopyObjectOperation.parseCopySource(bad) }
        }
        do { _ = try CopyObjectOperation.parseCopySource("src") } catch {
            #expect(error.code == "InvalidArgument")
            #expect(error.message.contains("found no '/'"))
        }
    }

    @Test func copy_directiveCOPY_takesTheSourcesTypeAndMetadata() async throws {
        let s3 = try await Self.fixture()
        let response = try await Self.copy(s3, "copy.txt", source: "/src/dir/a%20b.txt",
                                           headers: [("Content-Type", "image/png"), ("x-amz-meta-owner", "bob")])
        let root = try response.document()
        #expect(root.name == "CopyObjectResult")
        #expect(root.text("ETag") == "\"5d41402abc4b2a76b9719d911017c592\"")
        #expect(root.text("LastModified") == "2023-11-14T22:13:50.000Z")
        let copied = try await s3.storage.get("dst/copy.txt")
        #expect(copied.data == Array("hello".utf8))
        #expect(copied.info.contentType == "text/plain")
        // The source's default CRC64NVME (it was put without a checksum) holds for the copy's same bytes.
        let crc64 = Base64.encode(CRCBytes.bigEndian(CRC64NVME.checksum(Array("hello".utf8)), count: 8))
        #expect(copied.info.metadata == ["owner": "ann", "plugboard-s3-content-disposition": "inline",
                                         S3Checksum.metadataKey: "crc64nvme FULL_OBJECT " + crc64])
    }

    @Test func copy_directiveREPLACE_takesThisRequestsTypeAndMetadata() async throws {
        let s3 = try await Self.fixture()
        _ = try await Self.copy(s3, "copy.txt", source: "src/dir/a%20b.txt",
                                headers: [("x-amz-metadata-directive", "REPLACE"), ("Content-Type", "image/png"),
                                          ("x-amz-meta-owner", "bob"), ("Cache-Control", "no-cache")])
        let copied = try await s3.storage.get("dst/copy.txt")
        #expect(copied.data == Array("hello".utf8))
        #expect(copied.info.contentType == "image/png")
        #expect(copied.info.metadata == ["owner": "bob", "plugboard-s3-cache-control": "no-cache"])
    }

    @Test func copy_ontoItself_needsREPLACE() async throws {
        let s3 = try await Self.fixture()
        let error = await s3Error { try await Self.copy(s3, to: "src", "dir/a b.txt", source: "src/dir/a%20b.txt") }
        #expect(error?.code == "InvalidRequest")
        #expect(error?.message.contains("copy an object to itself") == true)
        let replaced = try await Self.copy(s3, to: "src", "dir/a b.txt", source: "src/dir/a%20b.txt",
                                           headers: [("x-amz-metadata-directive", "REPLACE"), ("x-amz-meta-state", "new")])
        #expect(try replaced.document().text("ETag") == "\"5d41402abc4b2a76b9719d911017c592\"")
        #expect(try await s3.storage.head("src/dir/a b.txt").metadata == ["state": "new"])
    }

    @Test func copy_multipartSource_getsItsOwnETag() async throws {
        let s3 = try await Self.fixture()
        try await s3.storage.put("src/parts", data: Array("hello".utf8), metadata: ["plugboard-s3-etag": "abcd-2"])
        let root = try await Self.copy(s3, "single", source: "src/parts").document()
        #expect(root.text("ETag") == "\"5d41402abc4b2a76b9719d911017c592\"")
        #expect(try await s3.storage.head("dst/single").metadata.isEmpty)
    }

    @Test func copy_sourceConditions() async throws {
        let s3 = try await Self.fixture()
        let etag = "\"5d41402abc4b2a76b9719d911017c592\""
        let modified = "Tue, 14 Nov 2023 22:13:20 GMT", before = "Tue, 14 Nov 2023 22:13:19 GMT"
        func copy(_ headers: [(String, String)]) async throws -> HTTPResponse {
            try await Self.copy(s3, "c", source: "src/dir/a%20b.txt", headers: headers)
        }
        #expect(try await copy([("x-amz-copy-source-if-match", etag)]).status == 200)
        #expect(try await copy([("x-amz-copy-source-if-none-match", "\"other\"")]).status == 200)
        #expect(try await copy([("x-amz-copy-source-if-modified-since", before)]).status == 200)
        #expect(try await copy([("x-amz-copy-source-if-unmodified-since", modified)]).status == 200)
        // S3's documented pairs: if-match true wins over if-unmodified-since false.
        #expect(try await copy([("x-amz-copy-source-if-match", etag), ("x-amz-copy-source-if-unmodified-since", before)]).status == 200)

        try await s3.storage.delete("dst/c")
        let cases: [([(String, String)], String)] = [
            ([("x-amz-copy-source-if-match", "\"other\"")], "x-amz-copy-source-if-match"),
            ([("x-amz-copy-source-if-none-match", etag)], "x-amz-copy-source-if-none-match"),
            ([("x-amz-copy-source-if-modified-since", modified)], "x-amz-copy-source-if-modified-since"),
            ([("x-amz-copy-source-if-unmodified-since", before)], "x-amz-copy-source-if-unmodified-since"),
            // if-none-match false and if-modified-since true: 412 (S3's documented pair).
            ([("x-amz-copy-source-if-none-match", etag), ("x-amz-copy-source-if-modified-since", before)], "x-amz-copy-source-if-none-match"),
        ]
        for (headers, condition) in cases {
            let error = await s3Error { try await copy(headers) }
            #expect(error?.code == "PreconditionFailed")
            #expect(error?.status == 412)
            #expect(error?.fields.first { $0.0 == "Condition" }?.1 == condition)
        }
        #expect(try await s3.storage.exists("dst/c") == false)
    }

    @Test func copy_refusals() async throws {
        let s3 = try await Self.fixture()
        let noKey = await s3Error { try await Self.copy(s3, "c", source: "src/missing") }
        #expect(noKey?.code == "NoSuchKey")
        #expect(noKey?.fields.first { $0.0 == "Key" }?.1 == "missing")
        let noSourceBucket = await s3Error { try await Self.copy(s3, "c", source: "gone/x") }
        #expect(noSourceBucket?.code == "NoSuchBucket")
        #expect(noSourceBucket?.fields.first { $0.0 == "BucketName" }?.1 == "gone")
        let noDestination = await s3Error { try await Self.copy(s3, to: "nowhere", "c", source: "src/dir/a%20b.txt") }
        #expect(noDestination?.code == "NoSuchBucket")
        #expect(noDestination?.fields.first { $0.0 == "BucketName" }?.1 == "nowhere")
        let directive = await s3Error { try await Self.copy(s3, "c", source: "src/dir/a%20b.txt", headers: [("x-amz-metadata-directive", "MERGE")]) }
        #expect(directive?.code == "InvalidArgument")
    }

    @Test func copy_largeObject_streams() async throws {
        let s3 = try await Self.fixture()
        let data = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try await s3.storage.put("src/large", data: data)
        let root = try await Self.copy(s3, "large", source: "src/large").document()
        let source = try await s3.storage.head("src/large")
        #expect(root.text("ETag") == "\"" + source.etag + "\"")
        #expect(try await s3.storage.data(for: "dst/large") == data)
    }
}

/// A storage whose one large object is made chunk by chunk as it is read, and whose put
/// reads the body chunk by chunk without keeping it: a copy through it holds at most one
/// chunk at a time, or the largest chunk put sees says otherwise.
final class ChunkedStorage: ForwardingStorage {
    static let size = 8 << 20, chunk = 64 << 10
    let base = InMemoryObjectStorage()
    private let largestChunk = Atomic<Int>(0)
    private let putBytes = Atomic<Int>(0)
    var largestChunkPut: Int { largestChunk.load(ordering: .relaxed) }
    var bytesPut: Int { putBytes.load(ordering: .relaxed) }

    func head(_ key: String) async throws -> ObjectInfo {
        if key == "src/huge" { return Self.hugeInfo }
        return try await base.head(key)
    }
    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        guard key == "dst/huge" else {
            return try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
        }
        var largest = 0
        let total = try await body.forEachChunk(upTo: Self.size) { chunk in largest = max(largest, chunk.count) }
        largestChunk.store(largest, ordering: .relaxed)
        putBytes.store(total, ordering: .relaxed)
        return ObjectInfo(key: key, size: total, etag: "0123456789abcdef0123456789abcdef", lastModified: Timestamp(secondsSince1970: 1_700_000_100))
    }
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        guard key == "src/huge" else { return try await base.get(key, range: range) }
        let produced = Atomic<Int>(0)
        let body = ObjectBody(length: Self.size) {
            let done = produced.load(ordering: .relaxed)
            guard done < Self.size else { return nil }
            produced.store(done + Self.chunk, ordering: .relaxed)
            return [UInt8](repeating: 7, count: Self.chunk)
        }
        return ObjectStream(info: Self.hugeInfo, range: nil, body: body)
    }

    static let hugeInfo = ObjectInfo(key: "src/huge", size: size, etag: "fedcba9876543210fedcba9876543210",
                                     lastModified: Timestamp(secondsSince1970: 1_700_000_000))
}

@Suite struct CopyStreamingTests {
    @Test func copy_passesTheSourcesChunksToTheDestination() async throws {
        let storage = ChunkedStorage()
        let context = S3Context(storage: storage, logger: .disabled, region: "us-west-2", buckets: S3BucketGate())
        let s3 = S3Fixture()
        _ = try await BucketOperations.createBucket(context, s3.request("PUT", bucket: "src"))
        _ = try await BucketOperations.createBucket(context, s3.request("PUT", bucket: "dst"))
        let response = try await CopyObjectOperation.copyObject(context, s3.request("PUT", bucket: "dst", key: "huge",
                                                                                     headers: [("x-amz-copy-source", "/src/huge")]))
        #expect(try response.document().text("ETag") == "\"0123456789abcdef0123456789abcdef\"")
        #expect(storage.bytesPut == ChunkedStorage.size)
        #expect(storage.largestChunkPut == ChunkedStorage.chunk)
    }
}
