import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardS3Server
import Testing

/// PostObject over InMemoryStorage with forms built and signed here, as boto3's
/// `generate_presigned_post` signs them: every refusal stores nothing.
@Suite struct PostObjectOperationTests {
    static let keyID = "AKIDPOSTTEST"
    static let secret = "post-test-secret"
    static let helloMD5 = "\"5d41402abc4b2a76b9719d911017c592\"" // "hello"
    static let boundary = MultipartParserTests.boundary

    /// A signed form's fields: the signing fields, the policy over `conditions` (beside
    /// the bucket and the signing fields, which boto3 adds too), then `fields`.
    static func signed(_ fields: [(String, String)], conditions: [String], bucket: String = "docs", region: String = "us-west-2",
                       now: Timestamp, expiresIn: Int64 = 3600, keyID: String = keyID, secret: String = secret) throws -> [(String, String)] {
        let date = SigV4Verifier.amzStamp(now)
        let day = String(date.prefix(8))
        let credential = "\(keyID)/\(day)/\(region)/s3/aws4_request"
        let expiration = Timestamp(secondsSince1970: now.seconds + expiresIn).iso8601
        let all = ["{\"bucket\": \"\(bucket)\"}", "{\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}",
                   "{\"x-amz-credential\": \"\(credential)\"}", "{\"x-amz-date\": \"\(date)\"}"] + conditions
        let policy = Base64.encode(Array("{\"expiration\": \"\(expiration)\", \"conditions\": [\(all.joined(separator: ", "))]}".utf8))
        var key = Array(("AWS4" + secret).utf8)
        for part in [day, region, "s3", "aws4_request"] { key = try HMACSHA256.authenticationCode(for: Array(part.utf8), key: key) }
        let signature = Hex.encode(try HMACSHA256.authenticationCode(for: Array(policy.utf8), key: key))
        return fields + [("x-amz-algorithm", "AWS4-HMAC-SHA256"), ("x-amz-credential", credential), ("x-amz-date", date),
                         ("policy", policy), ("x-amz-signature", signature)]
    }

    static let verifier = SigV4Verifier(credentials: [S3Credential(accessKeyID: keyID, secretAccessKey: secret)], region: "us-west-2")

    /// POSTs `form` to bucket `docs` in `chunks` of that many bytes (one chunk when nil).
    static func post(_ s3: S3Fixture, _ form: [UInt8], chunks size: Int? = nil,
                     contentType: String = "multipart/form-data; boundary=\(boundary)") async throws -> HTTPResponse {
        var request = s3.request("POST", bucket: "docs", headers: [("Content-Type", contentType)], body: form)
        if let size {
            let source = ChunkSource(stride(from: 0, to: form.count, by: size).map { Array(form[$0..<min($0 + size, form.count)]) })
            request.body = ObjectBody(length: form.count) { source.next() }
        }
        return try await PostObjectOperation.postObject(s3.context, request, verifier: verifier, now: s3.clock.now)
    }

    static func form(_ fields: [(String, String)], file: (String?, String?, [UInt8])? = (nil, nil, Array("hello".utf8)),
                     after: [(String, String)] = []) -> [UInt8] {
        MultipartParserTests.form(fields, file: file.map { (filename: $0.0, type: $0.1, content: $0.2) }, after: after)
    }

    static func bucketKeys(_ s3: S3Fixture) async throws -> [String] {
        try await s3.storage.list(prefix: "docs/", limit: 1000, continuationToken: nil).objects.map(\.key)
    }

    static let uploadConditions = ["[\"starts-with\", \"$key\", \"up/\"]", "[\"starts-with\", \"$Content-Type\", \"text/\"]",
                                   "{\"x-amz-meta-owner\": \"ann\"}", "[\"starts-with\", \"$Cache-Control\", \"\"]",
                                   "[\"content-length-range\", 1, 1048576]"]

    static func uploadFields(_ s3: S3Fixture, extra: [(String, String)] = [], conditions: [String] = []) throws -> [(String, String)] {
        try signed([("key", "up/${filename}"), ("Content-Type", "text/plain"), ("x-amz-meta-owner", "ann"), ("Cache-Control", "max-age=60")] + extra,
                   conditions: uploadConditions + conditions, now: s3.clock.now)
    }

    @Test func storesTheFile_answering204WithETagAndLocation() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let response = try await Self.post(s3, Self.form(try Self.uploadFields(s3), file: ("a.txt", "application/octet-stream", Array("hello".utf8))))
        #expect(response.status == 204)
        #expect(response.header("ETag") == Self.helloMD5)
        #expect(response.header("Location") == "http://s3.test/docs/up/a.txt")
        let stored = try await s3.storage.get("docs/up/a.txt")
        #expect(stored.data == Array("hello".utf8))
        #expect(stored.info.contentType == "text/plain")
        #expect(stored.info.metadata == ["owner": "ann", "plugboard-s3-cache-control": "max-age=60"])
    }

    /// A form signed the V2 way (`AWSAccessKeyId`, `policy`, `signature`: the HMAC-SHA1 of
    /// the policy's base64), served where the endpoint serves V2 and refused where not.
    @Test func signatureVersion2Form_storesWhenServed_andIsInvalidRequestWhenNot() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let expiration = Timestamp(secondsSince1970: s3.clock.now.seconds + 600).iso8601
        let policy = Base64.encode(Array(#"{"expiration": "\#(expiration)", "conditions": [{"bucket": "docs"}, ["starts-with", "$key", "v2/"]]}"#.utf8))
        func form(signature: String) -> [UInt8] {
            Self.form([("key", "v2/${filename}"), ("AWSAccessKeyId", Self.keyID), ("policy", policy), ("signature", signature)],
                      file: ("a.txt", nil, Array("hello".utf8)))
        }
        let signature = Base64.encode(try HMACSHA1.authenticationCode(for: Array(policy.utf8), key: Array(Self.secret.utf8)))
        let served = SigV4Verifier(credentials: [S3Credential(accessKeyID: Self.keyID, secretAccessKey: Self.secret)], region: "us-west-2",
                                   signatureV2: true)
        func post(_ body: [UInt8], verifier: SigV4Verifier) async throws -> HTTPResponse {
            let request = s3.request("POST", bucket: "docs", headers: [("Content-Type", "multipart/form-data; boundary=\(Self.boundary)")], body: body)
            return try await PostObjectOperation.postObject(s3.context, request, verifier: verifier, now: s3.clock.now)
        }
        let refused = await s3Error { try await post(form(signature: signature), verifier: Self.verifier) }
        #expect(refused?.code == "InvalidRequest")
        let other = (signature.hasPrefix("A") ? "B" : "A") + signature.dropFirst()
        let forged = await s3Error { try await post(form(signature: other), verifier: served) }
        #expect(forged?.code == "SignatureDoesNotMatch")
        #expect(try await Self.bucketKeys(s3).isEmpty)
        let stored = try await post(form(signature: signature), verifier: served)
        #expect(stored.status == 204)
        #expect(try await s3.storage.get("docs/v2/a.txt").data == Array("hello".utf8))
    }

    @Test func checksTheFormsChecksum_andAnswersIt() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let fields = try Self.uploadFields(s3, extra: [("x-amz-checksum-crc32", "NhCmhg=="), ("Content-MD5", "XUFAKrxLKna5cZ2REBfFkg==")],
                                           conditions: ["[\"starts-with\", \"$x-amz-checksum-crc32\", \"\"]", "[\"starts-with\", \"$Content-MD5\", \"\"]"])
        let response = try await Self.post(s3, Self.form(fields, file: ("a.txt", nil, Array("hello".utf8))))
        #expect(response.status == 204)
        #expect(response.header("x-amz-checksum-crc32") == "NhCmhg==")
    }

    @Test func locationFollowsTheAddressing() throws {
        let s3 = S3Fixture()
        var request = s3.request("POST", bucket: "docs", headers: [("X-Forwarded-Proto", "https")])
        #expect(PostObjectOperation.objectURL(request, bucket: "docs", key: "a b/c+d") == "https://s3.test/docs/a%20b/c%2Bd")
        // Virtual-hosted: the bucket is the host's, the path is "/".
        request.head = RequestHead(method: "POST", target: "/", version: .http11,
                                   headers: HTTPHeaders([(name: "host", value: "docs.s3.test:9000")]),
                                   framing: .none, keepAlive: true, expectsContinue: false)
        #expect(PostObjectOperation.objectURL(request, bucket: "docs", key: "k") == "http://docs.s3.test:9000/k")
    }

    @Test func streamsALargeFileInSmallChunks() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        _ = try await Self.post(s3, Self.form(try Self.uploadFields(s3), file: ("big.bin", nil, content)), chunks: 1000)
        #expect(try await s3.storage.data(for: "docs/up/big.bin") == content)
    }

    @Test func answers201WithAPostResponse_and200() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let created = try await Self.post(s3, Self.form(try Self.uploadFields(s3, extra: [("success_action_status", "201")],
                                                                                 conditions: ["{\"success_action_status\": \"201\"}"]),
                                                        file: ("a&b.txt", nil, Array("hello".utf8))))
        #expect(created.status == 201)
        let document = try created.document()
        #expect(document.name == "PostResponse")
        #expect(document.child("Bucket")?.text == "docs")
        #expect(document.child("Key")?.text == "up/a&b.txt")
        #expect(document.child("ETag")?.text == Self.helloMD5)
        #expect(document.child("Location")?.text == "http://s3.test/docs/up/a%26b.txt")

        let ok = try await Self.post(s3, Self.form(try Self.uploadFields(s3, extra: [("success_action_status", "200")],
                                                                            conditions: ["[\"eq\", \"$success_action_status\", \"200\"]"])))
        #expect(ok.status == 200)
        #expect(ok.body.isEmpty)
        // A status S3 does not answer is its default.
        let other = try await Self.post(s3, Self.form(try Self.uploadFields(s3, extra: [("success_action_status", "302")],
                                                                               conditions: ["[\"starts-with\", \"$success_action_status\", \"\"]"])))
        #expect(other.status == 204)
    }

    @Test func redirectsWithBucketKeyAndETag() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let response = try await Self.post(s3, Self.form(try Self.uploadFields(
            s3, extra: [("success_action_redirect", "https://app.example/done?x=1")],
            conditions: ["[\"starts-with\", \"$success_action_redirect\", \"https://app.example/\"]"]),
            file: ("a b.txt", nil, Array("hello".utf8))))
        #expect(response.status == 303)
        #expect(response.header("Location") == "https://app.example/done?x=1&bucket=docs&key=up%2Fa%20b.txt&etag=%225d41402abc4b2a76b9719d911017c592%22")
        #expect(try await s3.storage.exists("docs/up/a b.txt"))
    }

    @Test func ignoresFieldsAfterTheFile() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let response = try await Self.post(s3, Self.form(try Self.uploadFields(s3), file: ("a.txt", nil, Array("hello".utf8)),
                                                         after: [("key", "up/other"), ("x-amz-meta-late", "1")]), chunks: 5)
        #expect(response.status == 204)
        #expect(try await Self.bucketKeys(s3) == ["docs/up/a.txt"])
        #expect(try await s3.storage.head("docs/up/a.txt").metadata["late"] == nil)
    }

    @Test func refusalsStoreNothing() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let now = s3.clock.now
        let good = try Self.uploadFields(s3)
        func replacing(_ name: String, _ value: String) -> [(String, String)] { good.map { $0.0 == name ? ($0.0, value) : $0 } }
        let cases: [(String, [(String, String)], String, String)] = [
            ("a wrong signature", replacing("x-amz-signature", String(repeating: "0", count: 64)), "SignatureDoesNotMatch", "the policy field"),
            ("another secret", try Self.signed([("key", "up/x")], conditions: ["[\"starts-with\", \"$key\", \"\"]"], now: now, secret: "not-the-secret"),
             "SignatureDoesNotMatch", "different x-amz-signature"),
            ("an unknown key", replacing("x-amz-credential", "AKIDNOBODY/20231114/us-west-2/s3/aws4_request"), "InvalidAccessKeyId", "AKIDNOBODY"),
            ("another region", try Self.signed([("key", "up/x")], conditions: ["[\"starts-with\", \"$key\", \"\"]"], region: "eu-west-1", now: now),
             "InvalidArgument", "expecting \"us-west-2\""),
            ("an expired policy", try Self.signed([("key", "up/x")], conditions: ["[\"starts-with\", \"$key\", \"\"]"],
                                                  now: Timestamp(secondsSince1970: now.seconds - 7200)),
             "AccessDenied", "Invalid according to Policy: Policy expired"),
            ("a field no condition names", try Self.uploadFields(s3, extra: [("x-amz-meta-extra", "1")]), "AccessDenied",
             "Invalid according to Policy: Extra input fields: x-amz-meta-extra"),
            ("a key outside the prefix", replacing("key", "down/${filename}"), "AccessDenied",
             "Policy Condition failed: [\"starts-with\", \"$key\", \"up/\"]"),
            ("a Content-Type the policy refuses", replacing("Content-Type", "image/png"), "AccessDenied", "$content-type"),
            ("no key", good.filter { $0.0 != "key" }, "InvalidArgument", "Bucket POST must contain a field named 'key'"),
            ("no policy", good.filter { $0.0 != "policy" }, "InvalidArgument", "a field named 'policy'"),
            ("no signature at all", [("key", "up/x")], "AccessDenied", "anonymous requests are refused"),
            ("a SigV2 form", [("key", "up/x"), ("AWSAccessKeyId", Self.keyID), ("policy", "e30="), ("signature", "c2ln")],
             "InvalidRequest", "Signature Version 2"),
            ("a field given twice", good + [("KEY", "up/y")], "InvalidArgument", "given twice"),
            ("a wrong Content-MD5", try Self.uploadFields(s3, extra: [("Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA==")],
                                                          conditions: ["[\"starts-with\", \"$Content-MD5\", \"\"]"]), "BadDigest", "Content-MD5"),
        ]
        for (what, fields, code, text) in cases {
            let error = await s3Error { try await Self.post(s3, Self.form(fields)) }
            #expect(error?.code == code, "\(what): \(error?.message ?? "")")
            #expect(error?.message.contains(text) == true, "\(what): \(error?.message ?? "")")
            #expect(try await Self.bucketKeys(s3).isEmpty, "\(what) stored something")
        }

        let noFile = await s3Error { try await Self.post(s3, Self.form(good, file: nil)) }
        #expect(noFile?.code == "InvalidArgument")
        #expect(noFile?.message.contains("exactly one file") == true)
        let notAForm = await s3Error { try await Self.post(s3, Self.form(good), contentType: "application/x-www-form-urlencoded") }
        #expect(notAForm?.code == "PreconditionFailed")
        #expect(notAForm?.status == 412)
        let malformed = await s3Error { try await Self.post(s3, Array(Self.form(good).dropLast(40))) }
        #expect(malformed?.code == "MalformedPOSTRequest")
        let badPolicy = try Self.signed([("key", "up/x")], conditions: ["[\"eq\", \"$key\"]"], now: now)
        let invalidPolicy = await s3Error { try await Self.post(s3, Self.form(badPolicy)) }
        #expect(invalidPolicy?.code == "InvalidPolicyDocument")
        #expect(try await Self.bucketKeys(s3).isEmpty)

        let otherBucket = try Self.signed([("key", "up/x")], conditions: ["[\"starts-with\", \"$key\", \"\"]"], bucket: "nobucket", now: now)
        var request = s3.request("POST", bucket: "nobucket", headers: [("Content-Type", "multipart/form-data; boundary=\(Self.boundary)")],
                                 body: Self.form(otherBucket))
        let noBucket = await s3Error { try await PostObjectOperation.postObject(s3.context, request, verifier: Self.verifier, now: now) }
        #expect(noBucket?.code == "NoSuchBucket")
        // The policy names its bucket: a form for docs POSTed to another bucket fails it.
        request = s3.request("POST", bucket: "other", headers: [("Content-Type", "multipart/form-data; boundary=\(Self.boundary)")],
                             body: Self.form(good))
        let wrongBucket = await s3Error { try await PostObjectOperation.postObject(s3.context, request, verifier: Self.verifier, now: now) }
        #expect(wrongBucket?.message.contains("[\"eq\", \"$bucket\", \"docs\"]") == true)
    }

    @Test func holdsTheFileToTheContentLengthRange_storingNothingOutsideIt() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        let fields = try Self.signed([("key", "sized")], conditions: ["{\"key\": \"sized\"}", "[\"content-length-range\", 10, 1000]"],
                                     now: s3.clock.now)
        let large = await s3Error { try await Self.post(s3, Self.form(fields, file: (nil, nil, Array(repeating: 7, count: 5000))), chunks: 100) }
        #expect(large?.code == "EntityTooLarge")
        #expect(large?.fields.contains { $0.0 == "MaxSizeAllowed" && $0.1 == "1000" } == true)
        let small = await s3Error { try await Self.post(s3, Self.form(fields, file: (nil, nil, Array("tiny".utf8)))) }
        #expect(small?.code == "EntityTooSmall")
        #expect(small?.message.contains("at least 10 bytes, the file has 4") == true)
        #expect(try await Self.bucketKeys(s3).isEmpty)
        #expect(try await Self.post(s3, Self.form(fields, file: (nil, nil, Array(repeating: 7, count: 1000)))).status == 204)
        #expect(try await Self.bucketKeys(s3) == ["docs/sized"])
    }

    @Test func router_servesAPostToTheBucket_signedByItsForm() async throws {
        let (router, storage) = try await S3RouterTests.router()
        _ = await router.respond(to: try S3RouterTests.signed("PUT", "/forms"))
        let fields = try Self.signed([("key", "k")], conditions: ["{\"key\": \"k\"}"], bucket: "forms", region: "us-east-1",
                                     now: Timestamp.now(), keyID: S3RouterTests.keyID, secret: S3RouterTests.secret)
        let body = Self.form(fields)
        let head = RequestHead(method: "POST", target: "/forms", version: .http11,
                               headers: HTTPHeaders([(name: "host", value: "127.0.0.1:9000"),
                                                     (name: "content-type", value: "multipart/form-data; boundary=\(Self.boundary)")]),
                               framing: .length(body.count), keepAlive: true, expectsContinue: false)
        let response = await router.respond(to: HTTPRequest(head: head, body: body))
        #expect(response.status == 204, "\(S3RouterTests.text(response))")
        #expect(response.label == "PostObject")
        #expect(try await storage.data(for: "forms/k") == Array("hello".utf8))

        let anonymous = RequestHead(method: "POST", target: "/forms", version: .http11,
                                    headers: HTTPHeaders([(name: "host", value: "127.0.0.1:9000"), (name: "content-type", value: "text/plain")]),
                                    framing: .length(1), keepAlive: true, expectsContinue: false)
        let refused = await router.respond(to: HTTPRequest(head: anonymous, body: [1]))
        #expect(refused.status == 412)
    }
}
