import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

/// Flexible checksums kept with objects and parts, answered with `x-amz-checksum-mode:
/// ENABLED`, combined for completed uploads, and GetObjectAttributes.
@Suite struct ChecksumKeptTests {
    static let modeOn = [("x-amz-checksum-mode", "ENABLED")]

    static func base64CRC32(_ bytes: [UInt8]) -> String { Base64.encode(CRCBytes.bigEndian(UInt64(CRC32.checksum(bytes)), count: 4)) }

    @Test func crcCombine_isTheCRCOfTheConcatenation() {
        let whole = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for split in [0, 1, 7, 64, 1000, 2999, 3000] {
            let a = Array(whole[..<split]), b = Array(whole[split...])
            #expect(CRCCombine.combine(UInt64(CRC32.checksum(a)), UInt64(CRC32.checksum(b)), lengthOfSecond: b.count,
                                       polynomial: 0xEDB8_8320, width: 32) == UInt64(CRC32.checksum(whole)), "crc32 at \(split)")
            #expect(CRCCombine.combine(UInt64(CRC32C.checksum(a)), UInt64(CRC32C.checksum(b)), lengthOfSecond: b.count,
                                       polynomial: 0x82F6_3B78, width: 32) == UInt64(CRC32C.checksum(whole)), "crc32c at \(split)")
            #expect(CRCCombine.combine(CRC64NVME.checksum(a), CRC64NVME.checksum(b), lengthOfSecond: b.count,
                                       polynomial: 0x9A6C_9329_AC4B_C9B5, width: 64) == CRC64NVME.checksum(whole), "crc64nvme at \(split)")
        }
    }

    @Test func aPutsHeaderChecksum_isKept_andAnsweredOnlyWhenAskedForTheWholeObject() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let data = "checked bytes"
        let crc = Self.base64CRC32(Array(data.utf8))
        _ = try await s3.put("bkt", "k", data, headers: [("x-amz-checksum-crc32", crc)])

        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k", headers: Self.modeOn))
        #expect(head.header("x-amz-checksum-crc32") == crc)
        #expect(head.header("x-amz-checksum-type") == "FULL_OBJECT")
        let get = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "bkt", key: "k", headers: Self.modeOn))
        #expect(get.header("x-amz-checksum-crc32") == crc)
        // Not asked, or a range: none, as S3.
        #expect(try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k")).header("x-amz-checksum-crc32") == nil)
        let range = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "bkt", key: "k", headers: Self.modeOn + [("range", "bytes=0-3")]))
        #expect(range.header("x-amz-checksum-crc32") == nil)
        // Never as user metadata.
        #expect(!head.headers.contains { $0.0.hasPrefix("x-amz-meta-") })
    }

    /// A PutObject that names no checksum gets a CRC64NVME computed as its bytes pass, as
    /// AWS gives new objects since 2025: answered on the PUT, on HEAD and GET with the
    /// checksum mode, and by GetObjectAttributes.
    @Test func aPutWithoutAChecksum_getsADefaultCRC64NVME() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let data = Array("no checksum sent with these bytes".utf8)
        let expected = Base64.encode(CRCBytes.bigEndian(CRC64NVME.checksum(data), count: 8))
        let put = try await s3.put("bkt", "k", String(decoding: data, as: UTF8.self))
        #expect(put.header("x-amz-checksum-crc64nvme") == expected)
        #expect(put.header("x-amz-checksum-type") == "FULL_OBJECT")
        let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k", headers: Self.modeOn))
        #expect(head.header("x-amz-checksum-crc64nvme") == expected)
        #expect(head.header("x-amz-checksum-type") == "FULL_OBJECT")
        let get = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "bkt", key: "k", headers: Self.modeOn))
        #expect(get.header("x-amz-checksum-crc64nvme") == expected)
        let attributes = try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "k",
            query: [("attributes", "")], headers: [("x-amz-object-attributes", "Checksum")])).document()
        #expect(attributes.child("Checksum")?.text("ChecksumCRC64NVME") == expected)
        // One sent is the one kept; no default beside it.
        let crc = Self.base64CRC32(data)
        let sent = try await s3.put("bkt", "k2", String(decoding: data, as: UTF8.self), headers: [("x-amz-checksum-crc32", crc)])
        #expect(sent.header("x-amz-checksum-crc64nvme") == nil)
        let sentHead = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k2", headers: Self.modeOn))
        #expect(sentHead.header("x-amz-checksum-crc32") == crc)
        #expect(sentHead.header("x-amz-checksum-crc64nvme") == nil)
    }

    @Test func aTrailersChecksum_isKeptBeside_andForgottenWithItsObject() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let checksums = VerifiedChecksums()
        let body = try S3BodyDecoder.decode(ObjectBody(AWSChunkedTests.unsignedTrailerBody()), headers: AWSChunkedTests.unsignedTrailerHeaders,
                                            authentication: AWSChunkedTests.unsignedTrailerAuthentication, verified: checksums)
        let head = RequestHead(method: "PUT", target: "/b/k", version: .http11, headers: AWSChunkedTests.unsignedTrailerHeaders,
                               framing: .length(178), keepAlive: true, expectsContinue: false)
        let put = S3Request(head: head, bucket: "bkt", key: "k", query: [], body: body, requestID: "T", accessKeyID: "AKID", verifiedChecksums: checksums)
        _ = try await ObjectOperations.putObject(s3.context, put)
        #expect(try await s3.storage.exists(MultipartLayout.checksumKey(bucket: "bkt", key: "k")))
        let answer = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k", headers: Self.modeOn))
        #expect(answer.header("x-amz-checksum-crc32") == AWSChunkedTests.trailerCRC32)

        // Replaced without a checksum: the record describes another object and is not answered.
        _ = try await s3.put("bkt", "k", "other bytes")
        #expect(try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "k", headers: Self.modeOn)).header("x-amz-checksum-crc32") == nil)
        _ = try await ObjectOperations.deleteObject(s3.context, s3.request("DELETE", bucket: "bkt", key: "k"))
        #expect(try await !s3.storage.exists(MultipartLayout.checksumKey(bucket: "bkt", key: "k")))
    }

    /// An upload made with an algorithm: every part carries it, ListParts answers it, the
    /// Complete answers the parts' checksum of the upload's type, HEAD and
    /// GetObjectAttributes answer it and the parts.
    @Test(arguments: [("CRC32", "COMPOSITE"), ("CRC32", "FULL_OBJECT"), ("CRC64NVME", "FULL_OBJECT"), ("SHA256", "COMPOSITE")])
    func anUploadWithAnAlgorithm_keepsAndCombinesItsPartsChecksums(_ algorithmName: String, _ typeName: String) async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let algorithm = try #require(ChecksumAlgorithm(rawValue: algorithmName.lowercased()))
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: "big", query: [("uploads", "")],
                                                                                                      headers: [("x-amz-checksum-algorithm", algorithmName), ("x-amz-checksum-type", typeName)]))
            #expect(created.header("x-amz-checksum-algorithm") == algorithmName)
            #expect(created.header("x-amz-checksum-type") == typeName)
            let id = try #require(try created.document().text("UploadId"))
            let parts = [Array("first part, ".utf8), Array("second".utf8), Array(" and third".utf8)]
            var listed: [(Int, String, String)] = []
            for (index, bytes) in parts.enumerated() {
                let value = Base64.encode(try algorithm.digest(of: bytes))
                let answer = try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "bkt", key: "big",
                    query: [("partNumber", "\(index + 1)"), ("uploadId", id)], headers: [(algorithm.headerName, value)], body: bytes))
                listed.append((index + 1, try #require(answer.header("ETag")), value))
            }
            // A part without the upload's checksum is refused.
            let bare = await s3Error { try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "bkt", key: "big",
                query: [("partNumber", "4"), ("uploadId", id)], body: [1])) }
            #expect(bare?.code == "InvalidRequest")

            let partsList = try await MultipartOperations.listParts(s3.context, s3.request("GET", bucket: "bkt", key: "big", query: [("uploadId", id)])).document()
            #expect(partsList.text("ChecksumAlgorithm") == algorithmName)
            #expect(partsList.children("Part").map { $0.text("Checksum" + algorithmName) } == listed.map { $0.2 })

            func document(_ checksumOf: (Int) -> String) -> [UInt8] {
                var xml = "<CompleteMultipartUpload>"
                for (number, etag, _) in listed {
                    xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(etag)</ETag><Checksum\(algorithmName)>\(checksumOf(number))</Checksum\(algorithmName)></Part>"
                }
                return Array((xml + "</CompleteMultipartUpload>").utf8)
            }
            // A listed checksum that is not the part's: refused, nothing stored.
            let wrong = await s3Error { try await MultipartOperations.completeMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: "big",
                query: [("uploadId", id)], body: document { $0 == 2 ? listed[0].2 : listed[$0 - 1].2 })) }
            #expect(wrong?.code == "InvalidPart")
            #expect(try await !s3.storage.exists("bkt/big"))

            let completed = try await MultipartOperations.completeMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: "big",
                query: [("uploadId", id)], body: document { listed[$0 - 1].2 })).document()
            // Independently of the server's code: composite is the hash of the parts'
            // digests with -N; full object is the checksum of all the bytes.
            let expected = typeName == "COMPOSITE"
                ? Base64.encode(try algorithm.digest(of: try parts.flatMap { try algorithm.digest(of: $0) })) + "-3"
                : Base64.encode(try algorithm.digest(of: parts.flatMap { $0 }))
            #expect(completed.text("Checksum" + algorithmName) == expected)
            #expect(completed.text("ChecksumType") == typeName)

            let head = try await ObjectOperations.headObject(s3.context, s3.request("HEAD", bucket: "bkt", key: "big", headers: Self.modeOn))
            #expect(head.header(algorithm.headerName) == expected)
            #expect(head.header("x-amz-checksum-type") == typeName)
            let attributes = try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "big",
                query: [("attributes", "")], headers: [("x-amz-object-attributes", "ETag,Checksum,ObjectParts,StorageClass,ObjectSize")])).document()
            #expect(attributes.text("ObjectSize") == String(parts.flatMap { $0 }.count))
            #expect(attributes.text("StorageClass") == "STANDARD")
            #expect(attributes.text("ETag")?.hasSuffix("-3") == true)
            #expect(attributes.child("Checksum")?.text("Checksum" + algorithmName) == expected)
            let objectParts = try #require(attributes.child("ObjectParts"))
            #expect(objectParts.text("PartsCount") == "3")
            #expect(objectParts.children("Part").map { $0.text("Size") } == parts.map { String($0.count) })
            #expect(objectParts.children("Part").map { $0.text("Checksum" + algorithmName) } == listed.map { $0.2 })
            // Nothing of the upload is left, checksum records included.
            #expect(try await s3.storage.list(prefix: MultipartLayout.uploadsPrefix(bucket: "bkt")).isEmpty)
        }
    }

    /// A copied part carries no checksum from the client: the server computes it, as S3
    /// does, so an upload made with an algorithm completes from copied parts too.
    @Test(arguments: [("SHA256", "COMPOSITE"), ("CRC32", "FULL_OBJECT")])
    func aCopiedPart_getsItsChecksumComputed(_ algorithmName: String, _ typeName: String) async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let algorithm = try #require(ChecksumAlgorithm(rawValue: algorithmName.lowercased()))
        let source = Array("the source object, copied as part one".utf8)
        _ = try await s3.put("bkt", "source", String(decoding: source, as: UTF8.self))
        try await MultipartOperations.$minimumPartSize.withValue(1) {
            let created = try await MultipartOperations.createMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: "joined", query: [("uploads", "")],
                                                                                                      headers: [("x-amz-checksum-algorithm", algorithmName), ("x-amz-checksum-type", typeName)]))
            let id = try #require(try created.document().text("UploadId"))
            let copied = try await MultipartOperations.uploadPartCopy(s3.context, s3.request("PUT", bucket: "bkt", key: "joined",
                query: [("partNumber", "1"), ("uploadId", id)], headers: [("x-amz-copy-source", "/bkt/source")])).document()
            let firstValue = Base64.encode(try algorithm.digest(of: source))
            #expect(copied.text("Checksum" + algorithmName) == firstValue)
            let second = Array(" and a part uploaded".utf8)
            let secondValue = Base64.encode(try algorithm.digest(of: second))
            let uploaded = try await MultipartOperations.uploadPart(s3.context, s3.request("PUT", bucket: "bkt", key: "joined",
                query: [("partNumber", "2"), ("uploadId", id)], headers: [(algorithm.headerName, secondValue)], body: second))
            let document = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(try #require(copied.text("ETag")))</ETag></Part>"
                + "<Part><PartNumber>2</PartNumber><ETag>\(try #require(uploaded.header("ETag")))</ETag></Part></CompleteMultipartUpload>"
            let completed = try await MultipartOperations.completeMultipartUpload(s3.context, s3.request("POST", bucket: "bkt", key: "joined",
                query: [("uploadId", id)], body: Array(document.utf8))).document()
            let expected = typeName == "COMPOSITE"
                ? Base64.encode(try algorithm.digest(of: try algorithm.digest(of: source) + algorithm.digest(of: second))) + "-2"
                : Base64.encode(try algorithm.digest(of: source + second))
            #expect(completed.text("Checksum" + algorithmName) == expected)
            #expect(try await s3.storage.get("bkt/joined").data == source + second)
        }
    }

    @Test func checksumRequests_areCheckedAsS3ChecksThem() async throws {
        for (algorithm, type, why) in [("MD5", nil, "unsupported"), ("SHA1", "FULL_OBJECT", "FULL_OBJECT checksum type cannot be used"),
                                        ("CRC64NVME", "COMPOSITE", "COMPOSITE checksum type cannot be used"), (nil, "COMPOSITE", "can only be used with"),
                                        ("CRC32", "PARTIAL", "invalid")] as [(String?, String?, String)] {
            do {
                _ = try S3Checksum.requested(algorithm: algorithm, type: type)
                Issue.record("\(algorithm ?? "-") \(type ?? "-") was accepted")
            } catch {
                #expect(error.code == "InvalidRequest")
                #expect(error.message.contains(why), "\(error.message)")
            }
        }
        #expect(try S3Checksum.requested(algorithm: "crc64nvme", type: nil)?.type == .fullObject)
        #expect(try S3Checksum.requested(algorithm: "crc32", type: nil)?.type == .composite)
    }

    @Test func getObjectAttributes_ofAnObjectStoredWhole_andItsRefusals() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        _ = try await s3.put("bkt", "k", "twelve bytes")
        let doc = try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "k",
            query: [("attributes", "")], headers: [("x-amz-object-attributes", "ETag, ObjectSize,ObjectParts")])).document()
        #expect(doc.text("ObjectSize") == "12")
        #expect(doc.text("ETag") == Hex.encode(try MD5Hasher.hash(Array("twelve bytes".utf8))))
        #expect(doc.child("ObjectParts") == nil)
        #expect(doc.child("StorageClass") == nil)
        let none = await s3Error { try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "k", query: [("attributes", "")])) }
        #expect(none?.code == "InvalidArgument")
        let bad = await s3Error { try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "k",
            query: [("attributes", "")], headers: [("x-amz-object-attributes", "Owner")])) }
        #expect(bad?.code == "InvalidArgument")
        let missing = await s3Error { try await GetObjectAttributesOperation.getObjectAttributes(s3.context, s3.request("GET", bucket: "bkt", key: "nope",
            query: [("attributes", "")], headers: [("x-amz-object-attributes", "ETag")])) }
        #expect(missing?.code == "NoSuchKey")
        #expect(S3Operation.identify(method: "GET", bucket: "bkt", key: "k", query: ["attributes"], copySource: false)?.0 == .getObjectAttributes)
    }
}
