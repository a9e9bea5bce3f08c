import InMemoryStorage
import PlugboardAPI
import PlugboardCrypto
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardS3Server
import PlugboardTesting
import Testing

/// The S3 router in process, over a container of the test's own: requests are signed
/// here (the string to sign is taken from the verifier's own refusal of a wrong
/// signature, then signed with the secret, as a client would), and answered through the
/// storage the container binds.
@Suite struct S3RouterTests {
    static let keyID = "AKIDROUTERTEST"
    static let secret = "router-test-secret"

    static func router(refusal: PlugboardError? = nil) async throws -> (S3Router, InMemoryObjectStorage) {
        let provider = ContainerProvider(refusal: refusal)
        let storage = InMemoryObjectStorage()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        let configuration = S3Router.Configuration(credentials: [S3Credential(accessKeyID: keyID, secretAccessKey: secret)])
        return (S3Router(provider: provider, configuration: configuration, logger: .disabled), storage)
    }

    /// A SigV4-signed request with an `x-amz-content-sha256` of `body`.
    static func signed(_ method: String, _ target: String, body: [UInt8] = [], extra: [(String, String)] = []) throws -> HTTPRequest {
        let now = Timestamp.now()
        let stamp = SigV4Verifier.amzStamp(now)
        let day = String(stamp.prefix(8))
        let payload = Hex.encode(try SHA256Hasher.hash(body))
        let fields: [(String, String)] = [("host", "127.0.0.1:9000"), ("x-amz-date", stamp), ("x-amz-content-sha256", payload)] + extra
        let names = fields.map(\.0).sorted().joined(separator: ";")
        let scope = "\(day)/us-east-1/s3/aws4_request"
        func head(_ signature: String) -> RequestHead {
            RequestHead(method: method, target: target, version: .http11,
                        headers: HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }
                                             + [(name: "authorization", value: "AWS4-HMAC-SHA256 Credential=\(keyID)/\(scope), SignedHeaders=\(names), Signature=\(signature)")]),
                        framing: body.isEmpty ? .none : .length(body.count), keepAlive: true, expectsContinue: false)
        }
        let verifier = SigV4Verifier(credentials: [S3Credential(accessKeyID: keyID, secretAccessKey: secret)], region: "us-east-1")
        let wrong = head(String(repeating: "0", count: 64))
        var stringToSign: String?
        do {
            _ = try verifier.authenticate(method: method, rawTarget: target, headers: wrong.headers, now: now)
        } catch {
            stringToSign = error.fields.first { $0.0 == "StringToSign" }?.1
        }
        let toSign = try #require(stringToSign, "the verifier accepted a zero signature")
        var key = Array(("AWS4" + secret).utf8)
        for part in [day, "us-east-1", "s3", "aws4_request"] { key = try HMACSHA256.authenticationCode(for: Array(part.utf8), key: key) }
        let signature = Hex.encode(try HMACSHA256.authenticationCode(for: Array(toSign.utf8), key: key))
        return HTTPRequest(head: head(signature), body: body)
    }

    static func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    @Test func signedRequests_reachTheBoundStorage_throughBucketsAsPrefixes() async throws {
        let (router, storage) = try await Self.router()
        let create = await router.respond(to: try Self.signed("PUT", "/photos"))
        #expect(create.status == 200, "\(Self.text(create))")
        let put = await router.respond(to: try Self.signed("PUT", "/photos/2024/a%20b.txt", body: Array("hello".utf8),
                                                          extra: [("content-type", "text/plain"), ("x-amz-meta-owner", "ada")]))
        #expect(put.status == 200, "\(Self.text(put))")
        #expect(Self.header(put, "ETag") == "\"5d41402abc4b2a76b9719d911017c592\"")
        let stored = try await storage.get("photos/2024/a b.txt")
        #expect(stored.data == Array("hello".utf8))
        #expect(stored.info.metadata["owner"] == "ada")
        let get = await router.respond(to: try Self.signed("GET", "/photos/2024/a%20b.txt"))
        #expect(get.status == 200)
        #expect(get.body == Array("hello".utf8))
        #expect(Self.header(get, "x-amz-meta-owner") == "ada")
        #expect(Self.header(get, "x-amz-request-id")?.utf8.count == 16)
    }

    @Test func errors_areS3sXML_withTheRequestID() async throws {
        let (router, _) = try await Self.router()
        _ = await router.respond(to: try Self.signed("PUT", "/photos"))
        let missing = await router.respond(to: try Self.signed("GET", "/photos/nothing-here"))
        #expect(missing.status == 404)
        let document = try S3XMLReader.parse(missing.body)
        #expect(document.name == "Error")
        #expect(document.text("Code") == "NoSuchKey")
        #expect(document.text("Key") == "nothing-here")
        #expect(document.text("RequestId") == Self.header(missing, "x-amz-request-id"))
        #expect(Self.header(missing, "Content-Type") == "application/xml")

        let noBucket = await router.respond(to: try Self.signed("GET", "/other/x"))
        #expect(noBucket.status == 404)
        #expect(try S3XMLReader.parse(noBucket.body).text("Code") == "NoSuchBucket")
    }

    @Test func unsignedUnsupportedAndNotReady_areRefusedBeforeTheStorage() async throws {
        let (router, storage) = try await Self.router()
        let anonymous = await router.respond(to: HTTPRequest(
            head: RequestHead(method: "PUT", target: "/photos", version: .http11, headers: HTTPHeaders([("host", "x")]),
                              framing: .none, keepAlive: true, expectsContinue: false), body: []))
        #expect(anonymous.status == 403)
        #expect(try S3XMLReader.parse(anonymous.body).text("Code") == "AccessDenied")
        #expect(storage.count == 0)

        let acl = await router.respond(to: try Self.signed("PUT", "/photos/k?acl"))
        #expect(acl.status == 501)
        let aclError = try S3XMLReader.parse(acl.body)
        #expect(aclError.text("Code") == "NotImplemented")
        #expect(aclError.text("Message")?.contains("PutObjectAcl") == true)

        let version = await router.respond(to: try Self.signed("GET", "/photos/k?versionId=abc"))
        #expect(version.status == 404)
        #expect(try S3XMLReader.parse(version.body).text("Code") == "NoSuchVersion")

        let patch = await router.respond(to: try Self.signed("PATCH", "/photos/k"))
        #expect(patch.status == 405)
        #expect(Self.header(patch, "Allow") != nil)

        let (notReady, _) = try await Self.router(refusal: PlugboardError(.httpUnavailable, "required plugin \"Files\" is failed"))
        let refused = await notReady.respond(to: try Self.signed("GET", "/photos/k"))
        #expect(refused.status == 503)
        let refusedError = try S3XMLReader.parse(refused.body)
        #expect(refusedError.text("Code") == "ServiceUnavailable")
        #expect(refusedError.text("Message")?.contains("required plugin") == true)
        #expect(Self.header(refused, "Retry-After") == "1")
    }

    /// The log line and the metric name what the router routed by: a copy (known only by
    /// its `x-amz-copy-source` header) is CopyObject, not PutObject.
    @Test func answersCarryTheirOperationsName_forTheLogAndTheMetric() async throws {
        let (router, _) = try await Self.router()
        let create = await router.respond(to: try Self.signed("PUT", "/photos"))
        #expect(create.label == "CreateBucket")
        let put = await router.respond(to: try Self.signed("PUT", "/photos/a", body: Array("a".utf8)))
        #expect(put.status == 200 && put.label == "PutObject")
        let copy = await router.respond(to: try Self.signed("PUT", "/photos/b", extra: [("x-amz-copy-source", "/photos/a")]))
        #expect(copy.status == 200, "\(Self.text(copy))")
        #expect(copy.label == "CopyObject")
        let missing = await router.respond(to: try Self.signed("GET", "/photos/none"))
        #expect(missing.status == 404 && missing.label == "GetObject")
        router.completed(Exchange(method: "PUT", target: "/photos/b", status: 200, bytes: 0, durationSeconds: 0.001, peer: "p",
                                  label: copy.label))
        let text = router.metrics.render()
        #expect(text.contains("plugboard_s3_requests_total{operation=\"CopyObject\",status=\"200\"} 1"))
        #expect(!text.contains("operation=\"PutObject\""))
    }

    /// The server's own refusals (a body over the limit, a head too large, no room for a
    /// body) carry a request ID too, in the header as in the XML.
    @Test func theServersRefusals_carryARequestID() throws {
        let router = S3Router(provider: ContainerProvider(), configuration: S3Router.Configuration(credentials: []), logger: .disabled)
        let refused = router.refusal(HTTPError.payloadTooLarge(limit: 5 << 30, found: "6442450944"), head: nil)
        #expect(refused.status == 400)  // S3 answers EntityTooLarge with 400
        let id = try #require(Self.header(refused, "x-amz-request-id"))
        #expect(id.utf8.count == 16)
        let error = try S3XMLReader.parse(refused.body)
        #expect(error.text("Code") == "EntityTooLarge")
        #expect(error.text("RequestId") == id)
    }

    @Test func metrics_countByOperationAndStatus() async throws {
        let (router, _) = try await Self.router()
        router.completed(Exchange(method: "PUT", target: "/b/k?partNumber=1&uploadId=x", status: 200, bytes: 0, durationSeconds: 0.001, peer: "p"))
        router.completed(Exchange(method: "PUT", target: "/b/k?partNumber=2&uploadId=x", status: 200, bytes: 0, durationSeconds: 0.001, peer: "p"))
        router.completed(Exchange(method: "GET", target: "/b/k", status: 404, bytes: 0, durationSeconds: 0.001, peer: "p"))
        let text = router.metrics.render()
        #expect(text.contains("plugboard_s3_requests_total{operation=\"UploadPart\",status=\"200\"} 2"))
        #expect(text.contains("plugboard_s3_requests_total{operation=\"GetObject\",status=\"404\"} 1"))
        // Each took 1 ms: in the bucket of 1 ms and every one above it, none below.
        #expect(text.contains("plugboard_s3_request_duration_seconds_bucket{operation=\"UploadPart\",le=\"0.0005\"} 0"))
        #expect(text.contains("plugboard_s3_request_duration_seconds_bucket{operation=\"UploadPart\",le=\"0.001\"} 2"))
        #expect(text.contains("plugboard_s3_request_duration_seconds_bucket{operation=\"UploadPart\",le=\"+Inf\"} 2"))
        #expect(text.contains("plugboard_s3_request_duration_seconds_count{operation=\"GetObject\"} 1"))
    }

    /// The reserved prefix, buckets that do not exist and names that are not buckets are
    /// never read or written through S3, whichever operation names them, path-style or
    /// virtual-hosted.
    @Test func everyOperation_refusesTheReservedPrefix_missingBuckets_andInvalidNames() async throws {
        let (router, storage) = try await Self.router()
        _ = try await storage.put(S3Namespace.markerKey(bucket: "photos"), data: [])
        _ = try await storage.put("photos/a.jpg", data: Array("jpeg".utf8))
        let partKey = "_plugboard-s3/uploads/photos/0123456789abcdef0123456789abcdef/part-00001"
        _ = try await storage.put(partKey, data: Array("secret part".utf8))
        _ = try await storage.put("ghost/x", data: Array("no bucket".utf8))

        let reserved = "/_plugboard-s3/uploads/photos/0123456789abcdef0123456789abcdef/part-00001"
        let cases: [(String, String, String)] = [
            ("GET", reserved, "InvalidBucketName"), ("HEAD", reserved, "InvalidBucketName"),
            ("PUT", reserved, "InvalidBucketName"), ("DELETE", reserved, "InvalidBucketName"),
            ("GET", "/_plugboard-s3/buckets/photos", "InvalidBucketName"), ("GET", "/_plugboard-s3", "InvalidBucketName"),
            ("GET", "/_plugboard-s3?list-type=2", "InvalidBucketName"), ("GET", "/_plugboard-s3?uploads", "InvalidBucketName"),
            ("GET", "/ghost/x", "NoSuchBucket"), ("HEAD", "/ghost/x", "NoSuchBucket"),
            ("GET", "/ghost/missing", "NoSuchBucket"), ("GET", "/Photos/a.jpg", "InvalidBucketName"),
            ("GET", "/photos%2Fa.jpg", "InvalidBucketName"), ("GET", "/ab/x", "InvalidBucketName"),
        ]
        for (method, target, code) in cases {
            let answer = await router.respond(to: try Self.signed(method, target, body: method == "PUT" ? [1] : []))
            #expect(answer.status == (code == "NoSuchBucket" ? 404 : 400), "\(method) \(target): \(answer.status) \(Self.text(answer))")
            if method != "HEAD" { #expect(Self.text(answer).contains("<Code>\(code)</Code>"), "\(method) \(target): \(Self.text(answer))") }
            #expect(!Self.text(answer).contains("secret part") && !Self.text(answer).contains("no bucket"))
        }
        #expect(try await storage.get(partKey).data == Array("secret part".utf8))
        // The bucket that exists still answers.
        let found = await router.respond(to: try Self.signed("GET", "/photos/a.jpg"))
        #expect(found.status == 200)
        #expect(found.body == Array("jpeg".utf8))
    }
}
