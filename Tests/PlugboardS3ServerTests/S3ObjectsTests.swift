import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

/// What every object write keeps from its request's headers (``S3Objects/metadata(fromHeaders:)``).
@Suite struct S3ObjectsTests {
    @Test func contentEncoding_dropsAwsChunked_anywhereInTheList() {
        #expect(S3Objects.storedContentEncoding("gzip, aws-chunked") == "gzip")
        #expect(S3Objects.storedContentEncoding("aws-chunked,gzip") == "gzip")
        #expect(S3Objects.storedContentEncoding("  AWS-Chunked ,\tgzip , br") == "gzip, br")
        #expect(S3Objects.storedContentEncoding("gzip,,aws-chunked,") == "gzip")
        #expect(S3Objects.storedContentEncoding("aws-chunked") == nil)
        #expect(S3Objects.storedContentEncoding(" aws-chunked , ") == nil)
        // Without aws-chunked the value is what the client sent.
        #expect(S3Objects.storedContentEncoding("gzip,br") == "gzip,br")
        #expect(S3Objects.storedContentEncoding("x-aws-chunked") == "x-aws-chunked")
    }

    @Test func putObject_storesContentEncoding_withoutAwsChunked() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        try await s3.put("docs", "a.gz", "hello", headers: [("Content-Encoding", "gzip, aws-chunked")])
        #expect(try await s3.storage.head("docs/a.gz").metadata["plugboard-s3-content-encoding"] == "gzip")
        try await s3.put("docs", "b", "hello", headers: [("Content-Encoding", "aws-chunked")])
        #expect(try await s3.storage.head("docs/b").metadata["plugboard-s3-content-encoding"] == nil)
        // Two fields are one list.
        try await s3.put("docs", "c", "hello", headers: [("Content-Encoding", "gzip"), ("Content-Encoding", "aws-chunked")])
        #expect(try await s3.storage.head("docs/c").metadata["plugboard-s3-content-encoding"] == "gzip")
        let get = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "a.gz"))
        #expect(get.header("Content-Encoding") == "gzip")
        let plain = try await ObjectOperations.getObject(s3.context, s3.request("GET", bucket: "docs", key: "b"))
        #expect(plain.header("Content-Encoding") == nil)
    }

    @Test func createMultipartUpload_andCopyReplace_storeContentEncoding_withoutAwsChunked() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let created = try await MultipartOperations.createMultipartUpload(
            s3.context, s3.request("POST", bucket: "docs", key: "big.gz", query: [("uploads", "")],
                                   headers: [("Content-Encoding", "aws-chunked, gzip")]))
        let id = try #require(try created.document().text("UploadId"))
        let part = try await MultipartOperations.uploadPart(
            s3.context, s3.request("PUT", bucket: "docs", key: "big.gz", query: [("partNumber", "1"), ("uploadId", id)], body: Array("only".utf8)))
        let etag = try #require(part.header("ETag"))
        let completion = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part></CompleteMultipartUpload>"
        _ = try await MultipartOperations.completeMultipartUpload(
            s3.context, s3.request("POST", bucket: "docs", key: "big.gz", query: [("uploadId", id)], body: Array(completion.utf8)))
        #expect(try await s3.storage.head("docs/big.gz").metadata["plugboard-s3-content-encoding"] == "gzip")

        try await s3.put("docs", "src", "hello", headers: [("Content-Encoding", "br")])
        _ = try await CopyObjectOperation.copyObject(s3.context, s3.request("PUT", bucket: "docs", key: "dst", headers: [
            ("x-amz-copy-source", "/docs/src"), ("x-amz-metadata-directive", "REPLACE"), ("Content-Encoding", "gzip,aws-chunked"),
        ]))
        #expect(try await s3.storage.head("docs/dst").metadata["plugboard-s3-content-encoding"] == "gzip")
        _ = try await CopyObjectOperation.copyObject(s3.context, s3.request("PUT", bucket: "docs", key: "dst2", headers: [
            ("x-amz-copy-source", "/docs/src"), ("x-amz-metadata-directive", "REPLACE"), ("Content-Encoding", "aws-chunked"),
        ]))
        #expect(try await s3.storage.head("docs/dst2").metadata["plugboard-s3-content-encoding"] == nil)
    }
}
