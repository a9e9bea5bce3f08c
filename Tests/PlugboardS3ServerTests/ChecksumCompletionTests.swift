import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

/// A CompleteMultipartUpload's `x-amz-checksum-*` names the object's checksum (the parts'),
/// never the Complete's own XML body: full-object values for the CRCs and composite ones
/// for every algorithm botocore sends, BadDigest when they do not match, and CopyObject
/// computing a requested algorithm.
@Suite struct ChecksumCompletionTests {
    static let parts = [Array("first part, ".utf8), Array("second".utf8), Array(" and third".utf8)]

    /// An upload of ``parts`` made with `createHeaders`, each part carrying its
    /// `algorithm` checksum; answers its ID and the Complete's document.
    static func upload(_ s3: S3Fixture, key: String, algorithm: ChecksumAlgorithm,
                       createHeaders: [(String, String)]) async throws -> (id: String, document: [UInt8]) {
        let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: key, query: [("uploads", "")],
                                                                                                  headers: createHeaders))
        let id = try #require(try created.document().text("UploadId"))
        var xml = "<CompleteMultipartUpload>"
        for (index, bytes) in parts.enumerated() {
            let answer = try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "bkt", key: key,
                query: [("partNumber", "\(index + 1)"), ("uploadId", id)], headers: [(algorithm.headerName, Base64.encode(try algorithm.digest(of: bytes)))],
                body: bytes))
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(try #require(answer.header("ETag")))</ETag></Part>"
        }
        return (id, Array((xml + "</CompleteMultipartUpload>").utf8))
    }

    static func complete(_ s3: S3Fixture, key: String, id: String, document: [UInt8], headers: [(String, String)]) async throws -> HTTPResponse {
        try await MultipartOperations.completeMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: key, query: [("uploadId", id)],
                                                                                   headers: headers, body: document))
    }

    /// Independently of the server's code: the CRC of every byte.
    static func fullObject(_ algorithm: ChecksumAlgorithm) throws -> String { Base64.encode(try algorithm.digest(of: parts.flatMap { $0 })) }

    /// The hash of the parts' digests.
    static func composite(_ algorithm: ChecksumAlgorithm) throws -> String {
        Base64.encode(try algorithm.digest(of: try parts.flatMap { try algorithm.digest(of: $0) }))
    }

    @Test(arguments: ["CRC32", "CRC32C", "CRC64NVME"])
    func aFullObjectValueOnTheComplete_isTheParts(_ name: String) async throws {
        let algorithm = try #require(ChecksumAlgorithm(rawValue: name.lowercased()))
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let create = [("x-amz-checksum-algorithm", name), ("x-amz-checksum-type", "FULL_OBJECT")]
            let (id, document) = try await Self.upload(s3, key: "full", algorithm: algorithm, createHeaders: create)
            let value = try Self.fullObject(algorithm)
            // Another value: BadDigest, nothing stored, the upload still open.
            let wrong = await s3Error { try await Self.complete(s3, key: "full", id: id, document: document,
                                                                headers: [(algorithm.headerName, try Self.composite(algorithm)), ("x-amz-checksum-type", "FULL_OBJECT")]) }
            #expect(wrong?.code == "BadDigest")
            #expect(wrong?.message.contains(value) == true)
            #expect(try await !s3.storage.exists("bkt/full"))
            // The other mode, or another algorithm: InvalidRequest.
            let mode = await s3Error { try await Self.complete(s3, key: "full", id: id, document: document, headers: [("x-amz-checksum-type", "COMPOSITE")]) }
            #expect(mode?.code == "InvalidRequest")
            let other = await s3Error { try await Self.complete(s3, key: "full", id: id, document: document,
                                                                headers: [("x-amz-checksum-sha256", Base64.encode(try ChecksumAlgorithm.sha256.digest(of: [1])))]) }
            #expect(other?.code == "InvalidRequest")

            // x-amz-mp-object-size (botocore's MpuObjectSize, beside a full-object value) is the parts' total.
            let size = Self.parts.reduce(0) { $0 + $1.count }
            let sized = await s3Error { try await Self.complete(s3, key: "full", id: id, document: document,
                                                                headers: [(algorithm.headerName, value), ("x-amz-mp-object-size", "\(size + 1)")]) }
            #expect(sized?.code == "InvalidRequest")
            #expect(sized?.message.contains("\(size) bytes") == true)
            let done = try await Self.complete(s3, key: "full", id: id, document: document,
                                               headers: [(algorithm.headerName, value), ("x-amz-checksum-type", "FULL_OBJECT"),
                                                         ("x-amz-mp-object-size", "\(size)")]).document()
            #expect(done.text("Checksum" + name) == value)
            #expect(done.text("ChecksumType") == "FULL_OBJECT")
            let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "full", headers: [("x-amz-checksum-mode", "ENABLED")]))
            #expect(head.header(algorithm.headerName) == value)
        }
    }

    @Test(arguments: ["CRC32", "SHA1", "SHA256"])
    func aCompositeValueOnTheComplete_withOrWithoutItsPartCount(_ name: String) async throws {
        let algorithm = try #require(ChecksumAlgorithm(rawValue: name.lowercased()))
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let value = try Self.composite(algorithm)
            for (key, sent) in [("with", value + "-3"), ("without", value)] {
                let (id, document) = try await Self.upload(s3, key: key, algorithm: algorithm,
                                                           createHeaders: [("x-amz-checksum-algorithm", name), ("x-amz-checksum-type", "COMPOSITE")])
                let wrong = await s3Error { try await Self.complete(s3, key: key, id: id, document: document, headers: [(algorithm.headerName, value + "-2")]) }
                #expect(wrong?.code == "BadDigest")
                let done = try await Self.complete(s3, key: key, id: id, document: document, headers: [(algorithm.headerName, sent)]).document()
                #expect(done.text("Checksum" + name) == value + "-3")
                #expect(done.text("ChecksumType") == "COMPOSITE")
            }
        }
    }

    @Test func anUploadMadeWithoutAnAlgorithm_takesTheCompletesFromItsParts() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let (id, document) = try await Self.upload(s3, key: "later", algorithm: .crc32, createHeaders: [])
            let value = try Self.fullObject(.crc32)
            let wrong = await s3Error { try await Self.complete(s3, key: "later", id: id, document: document, headers: [("x-amz-checksum-crc32", "AAAAAA==")]) }
            #expect(wrong?.code == "BadDigest")
            // The parts kept CRC32s, not SHA-256s.
            let missing = await s3Error { try await Self.complete(s3, key: "later", id: id, document: document,
                                                                  headers: [("x-amz-checksum-sha256", Base64.encode(try ChecksumAlgorithm.sha256.digest(of: [1])))]) }
            #expect(missing?.code == "InvalidPart")
            let done = try await Self.complete(s3, key: "later", id: id, document: document, headers: [("x-amz-checksum-crc32", value)]).document()
            #expect(done.text("ChecksumCRC32") == value)
            #expect(done.text("ChecksumType") == "FULL_OBJECT")
        }
    }

    /// Through the router, whose body decoder once held the Complete's checksum header to
    /// the CRC of its XML: no value could pass both that and the parts'.
    @Test func throughTheRouter_theCompletesHeaderIsNotTheXMLs() async throws {
        let (router, storage) = try await S3RouterTests.router()
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            #expect(await router.respond(to: try S3RouterTests.signed("PUT", "/bkt")).status == 200)
            let created = await router.respond(to: try S3RouterTests.signed("POST", "/bkt/obj?uploads",
                extra: [("x-amz-checksum-algorithm", "CRC32"), ("x-amz-checksum-type", "FULL_OBJECT")]))
            let id = try #require(try S3XMLReader.parse(created.body).text("UploadId"))
            var xml = "<CompleteMultipartUpload>"
            for (index, bytes) in Self.parts.enumerated() {
                let part = await router.respond(to: try S3RouterTests.signed("PUT", "/bkt/obj?partNumber=\(index + 1)&uploadId=\(id)", body: bytes,
                    extra: [("x-amz-checksum-crc32", Base64.encode(try ChecksumAlgorithm.crc32.digest(of: bytes)))]))
                #expect(part.status == 200, "\(String(decoding: part.body, as: UTF8.self))")
                xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(try #require(S3RouterTests.header(part, "ETag")))</ETag></Part>"
            }
            let value = try Self.fullObject(.crc32)
            let done = await router.respond(to: try S3RouterTests.signed("POST", "/bkt/obj?uploadId=\(id)", body: Array((xml + "</CompleteMultipartUpload>").utf8),
                extra: [("x-amz-checksum-crc32", value), ("x-amz-checksum-type", "FULL_OBJECT")]))
            #expect(done.status == 200, "\(String(decoding: done.body, as: UTF8.self))")
            #expect(try S3XMLReader.parse(done.body).text("ChecksumCRC32") == value)
            #expect(try await storage.get("bkt/obj").data == Self.parts.flatMap { $0 })
        }
    }

    @Test(arguments: ["CRC32", "CRC64NVME", "SHA1", "SHA256"])
    func copyObject_computesTheAlgorithmAskedFor(_ name: String) async throws {
        let algorithm = try #require(ChecksumAlgorithm(rawValue: name.lowercased()))
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let source = "the source object, copied with a checksum"
        // The source's own checksum (another algorithm) does not follow the copy.
        _ = try await s3.put("bkt", "source", source, headers: [("x-amz-checksum-crc32c", Base64.encode(try ChecksumAlgorithm.crc32c.digest(of: Array(source.utf8))))])
        let expected = Base64.encode(try algorithm.digest(of: Array(source.utf8)))
        let copied = try await CopyObjectOperation.copyObject(s3.context, s3.request("PUT", bucket: "bkt", key: "copy",
            headers: [("x-amz-copy-source", "/bkt/source"), ("x-amz-checksum-algorithm", name)])).document()
        #expect(copied.text("Checksum" + name) == expected)
        #expect(copied.text("ChecksumType") == "FULL_OBJECT")
        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "copy", headers: [("x-amz-checksum-mode", "ENABLED")]))
        #expect(head.header(algorithm.headerName) == expected)
        #expect(head.header("x-amz-checksum-crc32c") == nil)
        #expect(try await s3.storage.get("bkt/copy").data == Array(source.utf8))
        let refused = await s3Error { try await CopyObjectOperation.copyObject(s3.context, s3.request("PUT", bucket: "bkt", key: "other",
            headers: [("x-amz-copy-source", "/bkt/source"), ("x-amz-checksum-algorithm", "MD5")])) }
        #expect(refused?.code == "InvalidRequest")
        #expect(try await !s3.storage.exists("bkt/other"))
    }
}
