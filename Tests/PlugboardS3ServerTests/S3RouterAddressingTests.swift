import Testing
@testable import PlugboardHTTP
@testable import PlugboardS3Server

@Suite struct S3RouterAddressingTests {
    func head(_ method: String, _ target: String, host: String = "127.0.0.1:9000") -> RequestHead {
        RequestHead(method: method, target: target, version: .http11, headers: HTTPHeaders([("host", host)]),
                    framing: .none, keepAlive: true, expectsContinue: false)
    }

    @Test func pathStyle_bucketAndKeyDecodedOnce() throws {
        let a = try S3Router.address(head("GET", "/photos/2024/a%20b%2Bc%252F.jpg?x=1"), domain: nil)
        #expect(a.bucket == "photos")
        #expect(a.key == "2024/a b+c%2F.jpg")
        let bucketOnly = try S3Router.address(head("GET", "/photos/"), domain: nil)
        #expect(bucketOnly.bucket == "photos" && bucketOnly.key == nil)
        let service = try S3Router.address(head("GET", "/"), domain: nil)
        #expect(service.bucket == nil && service.key == nil)
        // S3 normalises nothing: a key may hold "//" and "..".
        let odd = try S3Router.address(head("GET", "/b//x/../y"), domain: nil)
        #expect(odd.key == "/x/../y")
    }

    @Test func virtualHostedStyle_onlyUnderTheDomain() throws {
        let a = try S3Router.address(head("PUT", "/2024/a.jpg", host: "photos.s3.example.test:9000"), domain: "s3.example.test")
        #expect(a.bucket == "photos" && a.key == "2024/a.jpg")
        let other = try S3Router.address(head("PUT", "/photos/a.jpg", host: "127.0.0.1:9000"), domain: "s3.example.test")
        #expect(other.bucket == "photos" && other.key == "a.jpg")
    }

    @Test func badPaths_areInvalidURI() {
        for target in ["/a%zz", "/%FF%FE"] {
            do {
                _ = try S3Router.address(head("GET", target), domain: nil)
                Issue.record("accepted \(target)")
            } catch {
                #expect(error.code == "InvalidURI")
            }
        }
    }

    @Test func operations_byMethodLevelAndSubresource() {
        func id(_ method: String, _ bucket: String?, _ key: String?, _ query: Set<String> = [], copy: Bool = false) -> String? {
            S3Operation.identify(method: method, bucket: bucket, key: key, query: query, copySource: copy)?.1
        }
        #expect(id("GET", nil, nil) == "ListBuckets")
        #expect(id("PUT", nil, nil) == nil)
        #expect(id("PUT", "b", nil) == "CreateBucket")
        #expect(id("GET", "b", nil, ["list-type", "prefix"]) == "ListObjectsV2")
        #expect(id("GET", "b", nil, ["prefix"]) == "ListObjects")
        #expect(id("GET", "b", nil, ["location"]) == "GetBucketLocation")
        #expect(id("GET", "b", nil, ["uploads"]) == "ListMultipartUploads")
        #expect(id("GET", "b", nil, ["versions"]) == "ListObjectVersions")
        #expect(id("POST", "b", nil, ["delete"]) == "DeleteObjects")
        #expect(id("PUT", "b", "k") == "PutObject")
        #expect(id("PUT", "b", "k", copy: true) == "CopyObject")
        #expect(id("PUT", "b", "k", ["partNumber", "uploadId"]) == "UploadPart")
        #expect(id("PUT", "b", "k", ["partNumber", "uploadId"], copy: true) == "UploadPartCopy")
        #expect(id("POST", "b", "k", ["uploads"]) == "CreateMultipartUpload")
        #expect(id("POST", "b", "k", ["uploadId"]) == "CompleteMultipartUpload")
        #expect(id("DELETE", "b", "k", ["uploadId"]) == "AbortMultipartUpload")
        #expect(id("GET", "b", "k", ["uploadId"]) == "ListParts")
        #expect(id("GET", "b", "k", ["response-content-type"]) == "GetObject")
        // Subresources not served name their operation, whatever else is there.
        #expect(id("PUT", "b", "k", ["acl"]) == "PutObjectAcl")
        #expect(id("GET", "b", nil, ["policy"]) == "GetBucketPolicy")
        #expect(id("DELETE", "b", nil, ["tagging"]) == "DeleteBucketTagging")
        #expect(id("PUT", "b", nil, ["versioning"]) == "PutBucketVersioning")
        #expect(S3Operation.identify(method: "PUT", bucket: "b", key: "k", query: ["acl"], copySource: false)?.0 == .unsupported)
        #expect(id("PATCH", "b", "k") == nil)
    }

    @Test func logLines_nameTheOperationFromTheTarget() {
        #expect(S3Router.operationName(method: "PUT", target: "/b/k?partNumber=1&uploadId=x") == "UploadPart")
        #expect(S3Router.operationName(method: "GET", target: "/b?list-type=2&prefix=a") == "ListObjectsV2")
        #expect(S3Router.operationName(method: "GET", target: "/") == "ListBuckets")
        #expect(S3Router.operationName(method: "-", target: "-") == "-")
    }

    @Test func logLines_neverHoldAPresignedSignature() {
        #expect(S3Router.loggable("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abcdef0123&X-Amz-Expires=60")
                == "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=<redacted>&X-Amz-Expires=60")
        #expect(S3Router.loggable("/b/k?x-amz-signature=ff") == "/b/k?x-amz-signature=<redacted>")
        #expect(S3Router.loggable("/b/k?prefix=a") == "/b/k?prefix=a")
        // Signature Version 2's presigned URLs.
        #expect(S3Router.loggable("/b/k?AWSAccessKeyId=AKID&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D")
                == "/b/k?AWSAccessKeyId=AKID&Expires=1175139620&Signature=<redacted>")
    }

    @Test func requestIDs_areSixteenHexDigitsAndUnique() {
        let ids = S3RequestIDs()
        let some = (0..<100).map { _ in ids.next() }
        #expect(Set(some).count == 100)
        #expect(some.allSatisfy { $0.utf8.count == 16 && $0.allSatisfy { $0.isHexDigit && !$0.isLowercase } })
        // A counter from a random start, written in full (leading zeros included).
        let values = some.compactMap { UInt64($0, radix: 16) }
        #expect(values.count == 100 && zip(values, values.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
    }
}
