import PlugboardAPI
import Testing
import PlugboardSigV4
@testable import S3StorageClient

/// The signer against AWS's published examples: the S3 API reference's "Examples:
/// Signature Calculations" (header-based auth, single chunk) and the SigV4 test suite's
/// get-vanilla. Expected signatures are AWS's, copied from those documents.
@Suite struct SigV4SignerTests {
    static let s3Example = SigV4Signer(accessKeyId: "AKIAIOSFODNN7EXAMPLE",
                                       secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                       region: "us-east-1", service: "s3")
    static let date = AmzDate(stamp: "20130524T000000Z")
    static let host = ("host", "examplebucket.s3.amazonaws.com")

    @Test func getObjectWithRange() throws {
        let signed = try Self.s3Example.sign(
            method: "GET", path: "/test.txt", query: [],
            headers: [Self.host, ("range", "bytes=0-9"), ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash),
                      ("x-amz-date", "20130524T000000Z")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
        #expect(signed.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(signed.authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func putObject_keyEncodedAsS3Does() throws {
        let payloadHash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        #expect(S3URIEncoding.encodePath("test$file.text") == "test%24file.text")
        let signed = try Self.s3Example.sign(
            method: "PUT", path: "/" + S3URIEncoding.encodePath("test$file.text"), query: [],
            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), Self.host, ("x-amz-content-sha256", payloadHash),
                      ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
            payloadHash: payloadHash, date: Self.date)
        #expect(signed.signedHeaders == "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class")
        #expect(signed.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
        // The same with the day's key given, as the client passes it from its cache.
        let withKey = try Self.s3Example.sign(
            method: "PUT", path: "/test%24file.text", query: [],
            headers: [("Date", "Fri, 24 May 2013 00:00:00 GMT"), Self.host, ("x-amz-content-sha256", payloadHash),
                      ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
            payloadHash: payloadHash, date: Self.date, signingKey: try Self.s3Example.signingKey(day: "20130524"))
        #expect(withKey.signature == signed.signature)
    }

    @Test func getBucketLifecycle() throws {
        let signed = try Self.s3Example.sign(
            method: "GET", path: "/", query: [("lifecycle", "")],
            headers: [Self.host, ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash), ("x-amz-date", "20130524T000000Z")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
        #expect(signed.canonicalRequest.split(separator: "\n", omittingEmptySubsequences: false)[2] == "lifecycle=")
        #expect(signed.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func listObjects_queryOrderDoesNotMatter() throws {
        for query in [[("max-keys", "2"), ("prefix", "J")], [("prefix", "J"), ("max-keys", "2")]] {
            let signed = try Self.s3Example.sign(
                method: "GET", path: "/", query: query,
                headers: [Self.host, ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash), ("x-amz-date", "20130524T000000Z")],
                payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date)
            #expect(signed.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        }
    }

    /// The SigV4 test suite's get-vanilla: another service, no payload-hash header.
    @Test func testSuiteGetVanilla() throws {
        let signer = SigV4Signer(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                 region: "us-east-1", service: "service")
        let signed = try signer.sign(method: "GET", path: "/", query: [],
                                     headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")],
                                     payloadHash: SigV4Signer.emptyPayloadHash, date: AmzDate(stamp: "20150830T123600Z"))
        #expect(signed.authorization == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    }

    @Test func amzDateFromTimestamp() {
        #expect(AmzDate(iso8601: Timestamp(secondsSince1970: 1_369_353_600).iso8601).stamp == "20130524T000000Z")
        #expect(AmzDate(iso8601: Timestamp(secondsSince1970: 1_440_938_160, nanoseconds: 999_999_999).iso8601).stamp == "20150830T123600Z")
        #expect(AmzDate(stamp: "20150830T123600Z").day == "20150830")
    }

    @Test func uriEncoding_keysAndQueries() {
        #expect(S3URIEncoding.encodePath("a b/c+d/\u{E9}~_-.") == "a%20b/c%2Bd/%C3%A9~_-.")
        #expect(S3URIEncoding.encodePath("../x/./y/.../..z") == "%2E%2E/x/%2E/y/%2E%2E%2E/..z")
        #expect(S3URIEncoding.encodePath("//a//") == "//a//")
        #expect(S3URIEncoding.canonicalPath("../x/./y/.../..z") == "../x/./y/.../..z")
        #expect(S3URIEncoding.canonicalPath("a b/c+d/\u{E9}~_-./%") == "a%20b/c%2Bd/%C3%A9~_-./%25")
        #expect(S3URIEncoding.encodeQueryComponent("a/b=c&d") == "a%2Fb%3Dc%26d")
        #expect(S3URIEncoding.decodeFormComponent("a+b%2Bc%e9%C3%A9") == Array("a b+c".utf8) + [0xE9, 0xC3, 0xA9])
        #expect(S3URIEncoding.decodeFormComponent("bad%2") == nil)
        #expect(S3URIEncoding.decodeFormComponent("bad%zz") == nil)
    }

    @Test func headerValuesAreTrimmedAndFolded() {
        #expect(SigV4Signer.canonicalValue("  a   b\t c ") == "a b c")
    }
}
