import InMemoryStorage
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardS3Server
import PlugboardTesting
import Testing

/// Signature Version 2 (opt in): AWS's published examples ("Signing and authenticating
/// REST requests", S3 developer guide; the signatures there were made for the bucket
/// `johnsmith`, which later copies of the page renamed without signing again), the
/// refusals S3 makes, and requests through the router with V2 on and off.
@Suite struct SigV2VerifierTests {
    static let accessKey = "AKIAIOSFODNN7EXAMPLE"
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    static let credentials = [S3Credential(accessKeyID: accessKey, secretAccessKey: secret)]
    static let verifier = SigV4Verifier(credentials: credentials, region: "us-east-1", signatureV2: true)
    /// Tue, 27 Mar 2007 19:36:42 +0000, the first example's time.
    static let exampleTime = Timestamp(secondsSince1970: 1_175_024_202)

    static func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        HTTPHeaders(fields.map { (name: $0.0.lowercased(), value: $0.1) })
    }

    static func authenticate(_ method: String, _ target: String, _ fields: [(String, String)], bucket: String? = "johnsmith",
                             now: Timestamp = exampleTime, verifier: SigV4Verifier = verifier) throws(S3Error) -> S3Authentication {
        try verifier.authenticate(method: method, rawTarget: target, headers: headers(fields), now: now, hostBucket: bucket)
    }

    static func refusal(_ body: () throws(S3Error) -> S3Authentication) -> S3Error? {
        do {
            let auth = try body()
            Issue.record("expected a refusal, the request was accepted for \(auth.accessKeyID)")
            return nil
        } catch {
            return error
        }
    }

    static func field(_ error: S3Error?, _ name: String) -> String? { error?.fields.first { $0.0 == name }?.1 }

    // MARK: AWS's examples

    @Test func publishedHeaderExamples_areAccepted() throws {
        let examples: [(method: String, target: String, bucket: String?, fields: [(String, String)], signature: String)] = [
            // Object GET, virtual-hosted: the bucket comes from Host.
            ("GET", "/photos/puppy.jpg", "johnsmith", [("Host", "johnsmith.s3.amazonaws.com"), ("Date", "Tue, 27 Mar 2007 19:36:42 +0000")],
             "bWq2s1WEIj+Ydj0vQ697zp+IXMU="),
            // Object PUT: Content-Type is signed, Content-MD5's place is empty.
            ("PUT", "/photos/puppy.jpg", "johnsmith", [("Content-Type", "image/jpeg"), ("Content-Length", "94328"),
                                                       ("Host", "johnsmith.s3.amazonaws.com"), ("Date", "Tue, 27 Mar 2007 21:15:45 +0000")],
             "MyyxeRY7whkBe+bq8fHCL/2kKUg="),
            // List: the query's listing parameters are not signed.
            ("GET", "/?prefix=photos&max-keys=50&marker=puppy", "johnsmith", [("User-Agent", "Mozilla/5.0"), ("Host", "johnsmith.s3.amazonaws.com"),
                                                                             ("Date", "Tue, 27 Mar 2007 19:42:41 +0000")],
             "htDYFYduRNen8P9ZfE/s9SuKy0U="),
            // Fetch: the acl sub-resource is.
            ("GET", "/?acl", "johnsmith", [("Host", "johnsmith.s3.amazonaws.com"), ("Date", "Tue, 27 Mar 2007 19:44:46 +0000")],
             "c2WLPFtWHVgbEmeEG93a4cG37dM="),
            // Upload with metadata: x-amz-* sorted, lower-cased, trimmed, repeated names joined.
            ("PUT", "/db-backup.dat.gz", "static.johnsmith.net", [
                ("User-Agent", "curl/7.15.5"), ("Host", "static.johnsmith.net:8080"), ("Date", "Tue, 27 Mar 2007 21:06:08 +0000"),
                ("x-amz-acl", "public-read"), ("content-type", "application/x-download"), ("Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="),
                ("X-Amz-Meta-ReviewedBy", "joe@johnsmith.net"), ("X-Amz-Meta-ReviewedBy", "jane@johnsmith.net"),
                ("X-Amz-Meta-FileChecksum", "0x02661779"), ("X-Amz-Meta-ChecksumAlgorithm", "crc32"),
                ("Content-Disposition", "attachment; filename=database.dat"), ("Content-Encoding", "gzip"), ("Content-Length", "5913339"),
            ], "ilyl83RwaSoYIEdixDQcA4OnAnc="),
            // List all my buckets: no bucket, the resource is "/".
            ("GET", "/", nil, [("Host", "s3.amazonaws.com"), ("Date", "Wed, 28 Mar 2007 01:29:59 +0000")], "qGdzdERIC03wnaRNKh6OqZehG9s="),
            // Unicode keys, path style: the path is signed as sent, escapes and their case kept.
            ("GET", "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", nil, [("Host", "s3.amazonaws.com"), ("Date", "Wed, 28 Mar 2007 01:49:49 +0000")],
             "DNEZGsoieTZ92F3bUfSPQcbGmlM="),
        ]
        for example in examples {
            let fields = example.fields + [("Authorization", "AWS \(Self.accessKey):\(example.signature)")]
            let date = try #require(example.fields.first { $0.0 == "Date" }?.1)
            let now = try #require(SigV4Verifier.parseDateHeader(date))
            let auth = try Self.authenticate(example.method, example.target, fields, bucket: example.bucket, now: now)
            #expect(auth.accessKeyID == Self.accessKey, "\(example.target)")
            #expect(auth.payload == .unsigned)
        }
    }

    @Test func publishedDeleteExample_xAmzDateIsSignedAsAHeader_andDatesPlaceIsEmpty() throws {
        // The guide's Delete example puts x-amz-date's value in Date's place and leaves it
        // out of the x-amz-* headers; the guide's own text, boto, botocore, RGW and MinIO
        // leave Date's place empty and sign x-amz-date as a header, which is what is checked.
        let fields: [(String, String)] = [("User-Agent", "dotnet"), ("Host", "s3.amazonaws.com"), ("Date", "Tue, 27 Mar 2007 21:20:27 +0000"),
                                          ("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000")]
        let now = Timestamp(secondsSince1970: 1_175_030_426)
        let refused = Self.refusal { () throws(S3Error) in
            try Self.authenticate("DELETE", "/johnsmith/photos/puppy.jpg", fields + [("Authorization", "AWS \(Self.accessKey):lx3byBScXR6KzyMaifNkardMwNk=")],
                                  bucket: nil, now: now)
        }
        #expect(refused?.code == "SignatureDoesNotMatch")
        #expect(Self.field(refused, "StringToSign") == "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n/johnsmith/photos/puppy.jpg")
        let auth = try Self.authenticate("DELETE", "/johnsmith/photos/puppy.jpg", fields + [("Authorization", "AWS \(Self.accessKey):R4dJ53KECjStyBO5iTBJZ4XVOaI=")],
                                         bucket: nil, now: now)
        #expect(auth.accessKeyID == Self.accessKey)
    }

    @Test func publishedQueryStringExample_isAcceptedUntilItExpires() throws {
        let target = "/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620"
        let fields = [("Host", "johnsmith.s3.amazonaws.com")]
        let auth = try Self.authenticate("GET", target, fields, now: Timestamp(secondsSince1970: 1_175_139_620))
        #expect(auth.accessKeyID == Self.accessKey)
        // A day before is fine too: V2 URLs carry no start time, and no skew applies.
        #expect(try Self.authenticate("GET", target, fields, now: Timestamp(secondsSince1970: 1_175_053_220)).accessKeyID == Self.accessKey)
        let expired = Self.refusal { () throws(S3Error) in try Self.authenticate("GET", target, fields, now: Timestamp(secondsSince1970: 1_175_139_621)) }
        #expect(expired?.code == "AccessDenied")
        #expect(expired?.status == 403)
        #expect(expired?.message.hasPrefix("Request has expired") == true)
        #expect(Self.field(expired, "Expires") == "2007-03-29T03:40:20Z")
        #expect(Self.field(expired, "ServerTime") == "2007-03-29T03:40:21Z")
    }

    // MARK: What is signed

    @Test func subresources_areSortedDecodedAndTheRestLeftOut() throws {
        let date = "Tue, 27 Mar 2007 19:36:42 +0000"
        // UploadPart as botocore sends it: x-id is not signed, uploadId's value is decoded.
        let part = try Self.authenticate("PUT", "/photos/puppy.jpg?uploadId=a%2Fb&partNumber=2&x-id=UploadPart",
                                         [("Date", date), ("Authorization", "AWS \(Self.accessKey):1ZhXh/k0BNPFvSDNAObaRiWNbv8=")])
        #expect(part.accessKeyID == Self.accessKey)
        // A sub-resource without a value keeps no "=".
        let create = try Self.authenticate("POST", "/photos/puppy.jpg?uploads", [("Date", date), ("Authorization", "AWS \(Self.accessKey):GlWi7IV7Kj6pJKNBBNUkqWzI99g=")])
        #expect(create.accessKeyID == Self.accessKey)
        #expect(try SigV2Verifier.canonicalizedResource(rawPath: Array("/k".utf8), rawQuery: Array("versionId=3&acl&response-content-type=text%2Fplain&prefix=a".utf8),
                                                        hostBucket: "b") == "/b/k?acl&response-content-type=text/plain&versionId=3")
        #expect(try SigV2Verifier.canonicalizedResource(rawPath: [], rawQuery: [], hostBucket: nil) == "/")
        #expect(try SigV2Verifier.canonicalizedResource(rawPath: Array("/b".utf8), rawQuery: Array("uploads".utf8), hostBucket: nil) == "/b/?uploads")
        #expect(try SigV2Verifier.canonicalizedResource(rawPath: Array("/b/".utf8), rawQuery: [], hostBucket: nil) == "/b/")
        // An empty value signs the name alone (rclone sends "uploads=").
        #expect(try SigV2Verifier.canonicalizedResource(rawPath: Array("/b/k".utf8), rawQuery: Array("uploads=".utf8), hostBucket: nil) == "/b/k?uploads")
        // A bucket alone, path style, as rclone signs it: "/b" as sent.
        #expect(try SigV2Verifier.canonicalizedResources(rawPath: Array("/b".utf8), rawQuery: Array("acl".utf8), hostBucket: nil) == ["/b/?acl", "/b?acl"])
        #expect(try SigV2Verifier.canonicalizedResources(rawPath: Array("/b/k".utf8), rawQuery: [], hostBucket: nil) == ["/b/k"])
    }

    @Test func aChangedByte_doesNotMatch_andTheRefusalShowsWhatWasSigned() {
        let error = Self.refusal { () throws(S3Error) in
            try Self.authenticate("GET", "/photos/puppy.jpg", [("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
                                                               ("Authorization", "AWS \(Self.accessKey):bWq2s1WEIj+Ydj0vQ697zp+IXMV=")])
        }
        #expect(error?.code == "SignatureDoesNotMatch")
        #expect(error?.status == 403)
        #expect(Self.field(error, "AWSAccessKeyId") == Self.accessKey)
        #expect(Self.field(error, "StringToSign") == "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg")
        #expect(Self.field(error, "SignatureProvided") == "bWq2s1WEIj+Ydj0vQ697zp+IXMV=")
        #expect(Self.field(error, "StringToSignBytes")?.hasPrefix("47 45 54 0a 0a 0a 54") == true)
        #expect(error?.message.contains(Self.secret) == false)
    }

    // MARK: Refusals

    @Test func refusals_areS3s() {
        let date = ("Date", "Tue, 27 Mar 2007 19:36:42 +0000")
        func code(_ fields: [(String, String)], target: String = "/photos/puppy.jpg", now: Timestamp = Self.exampleTime) -> String? {
            Self.refusal { () throws(S3Error) in try Self.authenticate("GET", target, fields, now: now) }?.code
        }
        let good = ("Authorization", "AWS \(Self.accessKey):bWq2s1WEIj+Ydj0vQ697zp+IXMU=")
        #expect(code([date, ("Authorization", "AWS OTHERKEY:bWq2s1WEIj+Ydj0vQ697zp+IXMU=")]) == "InvalidAccessKeyId")
        #expect(code([date, ("Authorization", "AWS \(Self.accessKey)")]) == "InvalidArgument")
        #expect(code([date, ("Authorization", "AWS :abc")]) == "InvalidArgument")
        #expect(code([good]) == "AccessDenied")
        #expect(code([("Date", "yesterday"), good]) == "AccessDenied")
        // Fifteen minutes either way, as for SigV4.
        #expect(code([date, good], now: Timestamp(secondsSince1970: Self.exampleTime.seconds + 901)) == "RequestTimeTooSkewed")
        #expect(code([date, good], now: Timestamp(secondsSince1970: Self.exampleTime.seconds - 901)) == "RequestTimeTooSkewed")
        #expect(throws: Never.self) { try Self.authenticate("GET", "/photos/puppy.jpg", [date, good], now: Timestamp(secondsSince1970: Self.exampleTime.seconds + 900)) }
        // The query form: every parameter, a number for Expires, one mechanism at a time.
        #expect(code([], target: "/photos/puppy.jpg?AWSAccessKeyId=\(Self.accessKey)&Signature=x") == "AccessDenied")
        #expect(code([], target: "/photos/puppy.jpg?AWSAccessKeyId=\(Self.accessKey)&Signature=x&Expires=soon") == "AccessDenied")
        #expect(code([date, good], target: "/photos/puppy.jpg?AWSAccessKeyId=\(Self.accessKey)&Signature=x&Expires=1") == "InvalidArgument")
    }

    @Test func off_answersInvalidRequestAsAWSDoes() {
        let off = SigV4Verifier(credentials: Self.credentials, region: "us-east-1")
        let header = Self.refusal { () throws(S3Error) in
            try Self.authenticate("GET", "/photos/puppy.jpg", [("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
                                                               ("Authorization", "AWS \(Self.accessKey):bWq2s1WEIj+Ydj0vQ697zp+IXMU=")], verifier: off)
        }
        #expect(header?.code == "InvalidRequest")
        #expect(header?.status == 400)
        let query = Self.refusal { () throws(S3Error) in
            try Self.authenticate("GET", "/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620",
                                  [], now: Timestamp(secondsSince1970: 1_175_139_620), verifier: off)
        }
        #expect(query?.code == "InvalidRequest")
    }

    @Test func postForm_signedWithSHA1OfThePolicy() throws {
        let v2 = try #require(Self.verifier.signatureV2)
        let policy = Base64.encode(Array(#"{"expiration": "2007-12-01T12:00:00.000Z", "conditions": [{"bucket": "johnsmith"}]}"#.utf8))
        let signature = Base64.encode(try HMACSHA1.authenticationCode(for: Array(policy.utf8), key: Array(Self.secret.utf8)))
        #expect(try v2.verifyPost(accessKeyID: Self.accessKey, policy: policy, signature: signature) == Self.accessKey)
        do {
            _ = try v2.verifyPost(accessKeyID: Self.accessKey, policy: policy + "\n", signature: signature)
            Issue.record("a changed policy was accepted")
        } catch {
            #expect(error.code == "SignatureDoesNotMatch")
            #expect(Self.field(error, "StringToSign") == policy + "\n")
        }
        #expect(throws: S3Error.self) { try v2.verifyPost(accessKeyID: "OTHERKEY", policy: policy, signature: signature) }
    }

    // MARK: Through the router

    static func router(signatureV2: Bool, domain: String? = nil) async throws -> (S3Router, InMemoryObjectStorage) {
        let provider = ContainerProvider()
        let storage = InMemoryObjectStorage()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        let configuration = S3Router.Configuration(credentials: credentials, domain: domain, signatureV2: signatureV2)
        return (S3Router(provider: provider, configuration: configuration, logger: .disabled), storage)
    }

    /// A request signed as boto's `HmacV1Auth` signs it: `stringToSign` is written here, by
    /// hand, the way a client builds it.
    static func v2Request(_ method: String, _ target: String, resource: String, body: [UInt8] = [], host: String = "127.0.0.1:9000",
                          extra: [(String, String)] = []) throws -> HTTPRequest {
        let date = Timestamp.now().httpDate
        let md5 = extra.first { $0.0 == "content-md5" }?.1 ?? ""
        let type = extra.first { $0.0 == "content-type" }?.1 ?? ""
        let amz = extra.filter { $0.0.hasPrefix("x-amz-") }.sorted { $0.0 < $1.0 }.map { "\($0.0):\($0.1)\n" }.joined()
        let toSign = "\(method)\n\(md5)\n\(type)\n\(date)\n\(amz)\(resource)"
        let signature = Base64.encode(try HMACSHA1.authenticationCode(for: Array(toSign.utf8), key: Array(secret.utf8)))
        let fields = [("host", host), ("date", date)] + extra + [("authorization", "AWS \(accessKey):\(signature)")]
        let head = RequestHead(method: method, target: target, version: .http11, headers: HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }),
                               framing: body.isEmpty ? .none : .length(body.count), keepAlive: true, expectsContinue: false)
        return HTTPRequest(head: head, body: body)
    }

    @Test func router_servesV2WhenOn_andRefusesItWhenOff() async throws {
        let (router, storage) = try await Self.router(signatureV2: true)
        // A bucket alone is signed "/photos/", as botocore and s3cmd sign it, or "/photos", as rclone does.
        #expect(await router.respond(to: try Self.v2Request("PUT", "/photos", resource: "/photos/")).status == 200)
        #expect(await router.respond(to: try Self.v2Request("HEAD", "/photos", resource: "/photos")).status == 200)
        #expect(await router.respond(to: try Self.v2Request("HEAD", "/photos", resource: "/photo")).status == 403)
        let body = Array("hello".utf8)
        let md5 = Base64.encode(try MD5Hasher.hash(body))
        let put = await router.respond(to: try Self.v2Request("PUT", "/photos/a%20b.txt", resource: "/photos/a%20b.txt", body: body,
                                                              extra: [("content-md5", md5), ("content-type", "text/plain"), ("x-amz-meta-owner", "ada")]))
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        #expect(try await storage.get("photos/a b.txt").data == body)
        // Content-MD5 is what holds the body: a body that does not match it stores nothing.
        let tampered = await router.respond(to: try Self.v2Request("PUT", "/photos/c.txt", resource: "/photos/c.txt", body: Array("hellO".utf8),
                                                                   extra: [("content-md5", md5)]))
        #expect(tampered.status == 400)
        #expect(try S3XMLReader.parse(tampered.body).text("Code") == "BadDigest")
        let get = await router.respond(to: try Self.v2Request("GET", "/photos/a%20b.txt?response-content-type=x%2Fy",
                                                              resource: "/photos/a%20b.txt?response-content-type=x/y"))
        #expect(get.status == 200)
        #expect(get.body == body)

        let (off, _) = try await Self.router(signatureV2: false)
        let refused = await off.respond(to: try Self.v2Request("PUT", "/photos", resource: "/photos/"))
        #expect(refused.status == 400)
        #expect(try S3XMLReader.parse(refused.body).text("Code") == "InvalidRequest")
    }

    @Test func router_signsTheHostsBucket_inFrontOfThePath() async throws {
        let (router, storage) = try await Self.router(signatureV2: true, domain: "s3.example.test")
        let host = "photos.s3.example.test:9000"
        #expect(await router.respond(to: try Self.v2Request("PUT", "/", resource: "/photos/", host: host)).status == 200)
        let put = await router.respond(to: try Self.v2Request("PUT", "/k", resource: "/photos/k", body: [1, 2, 3], host: host))
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        #expect(try await storage.get("photos/k").data == [1, 2, 3])
    }
}
