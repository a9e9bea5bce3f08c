import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardSigV4
import Testing
@testable import PlugboardS3Server

/// AWS's published Signature Version 4 examples for S3 ("Authenticating Requests: Using
/// the Authorization Header", "Using Query Parameters"), and requests signed by botocore.
@Suite struct SigV4VerifierTests {
    static let accessKey = "AKIAIOSFODNN7EXAMPLE"
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// 2013-05-24T00:00:00Z, the examples' time.
    static let exampleTime = Timestamp(secondsSince1970: 1_369_353_600)
    static let verifier = SigV4Verifier(credentials: [S3Credential(accessKeyID: accessKey, secretAccessKey: secret)], region: "us-east-1")

    static func headers(_ fields: [(String, String)]) -> HTTPHeaders {
        HTTPHeaders(fields.map { (name: $0.0, value: $0.1) })
    }

    static func getObjectHeaders(authorization: String? = nil, range: String = "bytes=0-9") -> [(String, String)] {
        [("Host", "examplebucket.s3.amazonaws.com"), ("Range", range), ("x-amz-content-sha256", emptyHash),
         ("x-amz-date", "20130524T000000Z"),
         ("Authorization", authorization ?? "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")]
    }

    /// The error `body` throws, which must be an S3Error.
    static func refusal(_ body: () throws(S3Error) -> S3Authentication) -> S3Error? {
        do {
            let auth = try body()
            Issue.record("expected a refusal, the request was accepted for \(auth.accessKeyID)")
            return nil
        } catch {
            return error
        }
    }

    static func getObject(_ fields: [(String, String)], target: String = "/test.txt", now: Timestamp = exampleTime,
                          verifier: SigV4Verifier = verifier) throws(S3Error) -> S3Authentication {
        try verifier.authenticate(method: "GET", rawTarget: target, headers: headers(fields), now: now)
    }

    // MARK: The header form

    @Test func getObjectWithRange_isAccepted() throws {
        let auth = try Self.getObject(Self.getObjectHeaders())
        #expect(auth.accessKeyID == Self.accessKey)
        #expect(auth.payload == .sha256(Self.emptyHash))
        #expect(auth.seedSignature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(auth.scope == "20130524/us-east-1/s3/aws4_request")
        // The spacing SDKs use: ", " between components, or several spaces.
        for authorization in [
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            "  AWS4-HMAC-SHA256   Credential = AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request ,  SignedHeaders=host;range;x-amz-content-sha256;x-amz-date ,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41 ",
        ] {
            #expect(try Self.getObject(Self.getObjectHeaders(authorization: authorization)).accessKeyID == Self.accessKey)
        }
        // Header values are trimmed and their inner spaces folded before signing.
        #expect(try Self.getObject(Self.getObjectHeaders(range: "  bytes=0-9 ")).accessKeyID == Self.accessKey)
        // Any region when the server names none.
        let anyRegion = SigV4Verifier(credentials: [S3Credential(accessKeyID: Self.accessKey, secretAccessKey: Self.secret)], region: nil)
        #expect(try Self.getObject(Self.getObjectHeaders(), verifier: anyRegion).scope == "20130524/us-east-1/s3/aws4_request")
    }

    @Test func getObject_aChangedByte_doesNotMatch_andSaysWhatWasSigned() throws {
        let error = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(range: "bytes=0-8")) }
        #expect(error?.code == "SignatureDoesNotMatch")
        #expect(error?.status == 403)
        let fields = Dictionary(error?.fields ?? [], uniquingKeysWith: { a, _ in a })
        #expect(fields["CanonicalRequest"] == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-8
            x-amz-content-sha256:\(Self.emptyHash)
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            \(Self.emptyHash)
            """)
        #expect(fields["StringToSign"]?.hasPrefix("AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n") == true)
        #expect(fields["SignatureProvided"] == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(fields["AWSAccessKeyId"] == Self.accessKey)
        // The path, the method, and the signature itself.
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(), target: "/test.txu") }?.code == "SignatureDoesNotMatch")
        #expect(Self.refusal { () throws(S3Error) in
            try Self.verifier.authenticate(method: "HEAD", rawTarget: "/test.txt", headers: Self.headers(Self.getObjectHeaders()), now: Self.exampleTime)
        }?.code == "SignatureDoesNotMatch")
        let flipped = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb42"
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(authorization: flipped)) }?.code == "SignatureDoesNotMatch")
    }

    @Test func getObject_wrongSecret_unknownKey() {
        let wrong = SigV4Verifier(credentials: [S3Credential(accessKeyID: Self.accessKey, secretAccessKey: Self.secret + "x")], region: "us-east-1")
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(), verifier: wrong) }?.code == "SignatureDoesNotMatch")
        let other = SigV4Verifier(credentials: [S3Credential(accessKeyID: "AKIDOTHER", secretAccessKey: Self.secret)], region: "us-east-1")
        let error = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(), verifier: other) }
        #expect(error?.code == "InvalidAccessKeyId")
        #expect(error?.message.contains(Self.accessKey) == true)
    }

    @Test func clockSkew_isRefusedBeyondTheBound() throws {
        #expect(try Self.getObject(Self.getObjectHeaders(), now: Timestamp(secondsSince1970: 1_369_353_600 + 900)).accessKeyID == Self.accessKey)
        #expect(try Self.getObject(Self.getObjectHeaders(), now: Timestamp(secondsSince1970: 1_369_353_600 - 900)).accessKeyID == Self.accessKey)
        for now in [1_369_353_600 + 901, 1_369_353_600 - 901] {
            let error = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(), now: Timestamp(secondsSince1970: now)) }
            #expect(error?.code == "RequestTimeTooSkewed")
            #expect(error?.message.contains("2013-05-24T00:00:00Z") == true)
            #expect(error?.message.contains(now > 1_369_353_600 ? "2013-05-24T00:15:01Z" : "2013-05-23T23:44:59Z") == true)
        }
    }

    @Test func scope_serviceTerminatorRegionDay_areChecked() {
        func with(_ credential: String, date: String = "20130524T000000Z", verifier: SigV4Verifier = Self.verifier) -> S3Error? {
            var fields = Self.getObjectHeaders(authorization: "AWS4-HMAC-SHA256 Credential=\(credential),SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
            fields[3] = ("x-amz-date", date)
            return Self.refusal { () throws(S3Error) in try Self.getObject(fields, verifier: verifier) }
        }
        let service = with("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request")
        #expect(service?.code == "AuthorizationHeaderMalformed")
        #expect(service?.message.contains("\"ec2\"") == true && service?.message.contains("\"s3\"") == true)
        let terminator = with("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws5_request")
        #expect(terminator?.code == "AuthorizationHeaderMalformed")
        #expect(terminator?.message.contains("aws5_request") == true)
        let eu = SigV4Verifier(credentials: [S3Credential(accessKeyID: Self.accessKey, secretAccessKey: Self.secret)], region: "eu-west-1")
        let region = with("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request", verifier: eu)
        #expect(region?.code == "AuthorizationHeaderMalformed")
        #expect(region?.message.contains("\"us-east-1\" is wrong; expecting \"eu-west-1\"") == true)
        let day = with("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request", date: "20130525T000000Z")
        #expect(day?.code == "AuthorizationHeaderMalformed")
        #expect(day?.message.contains("20130525") == true)
        let shape = with("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1")
        #expect(shape?.code == "AuthorizationHeaderMalformed")
    }

    @Test func malformedAndMissingPieces_areRefused() {
        // No x-amz-content-sha256.
        var fields = Self.getObjectHeaders()
        fields.remove(at: 2)
        let missing = Self.refusal { () throws(S3Error) in try Self.getObject(fields) }
        #expect(missing?.code == "InvalidRequest")
        #expect(missing?.message.contains("x-amz-content-sha256") == true)
        // An x-amz-* header that is not signed.
        let unsigned = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders() + [("x-amz-meta-evil", "1")]) }
        #expect(unsigned?.code == "AccessDenied")
        #expect(unsigned?.fields.contains { $0.0 == "HeadersNotSigned" && $0.1 == "x-amz-meta-evil" } == true)
        // host unsigned; a signed header absent; a component missing.
        let noHost = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(authorization: noHost)) }?.message.contains("host") == true)
        var noRange = Self.getObjectHeaders()
        noRange.remove(at: 1)
        let absent = Self.refusal { () throws(S3Error) in try Self.getObject(noRange) }
        #expect(absent?.code == "AuthorizationHeaderMalformed")
        #expect(absent?.message.contains("\"range\"") == true)
        let twoParts = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host"
        let parts = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders(authorization: twoParts)) }
        #expect(parts?.code == "AuthorizationHeaderMalformed")
        #expect(parts?.message.contains("missing: Signature") == true)
        // Two Authorization headers.
        let two = Self.refusal { () throws(S3Error) in try Self.getObject(Self.getObjectHeaders() + [("Authorization", "AWS4-HMAC-SHA256 x")]) }
        #expect(two?.code == "InvalidArgument")
        // No date at all.
        var noDate = Self.getObjectHeaders()
        noDate.remove(at: 3)
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(noDate) }?.code == "AccessDenied")
    }

    @Test func anonymousAndSignatureVersion2_areRefused() {
        let anonymous = Self.refusal { () throws(S3Error) in try Self.getObject([("Host", "examplebucket.s3.amazonaws.com")]) }
        #expect(anonymous?.code == "AccessDenied")
        #expect(anonymous?.message.contains("anonymous requests are refused: sign with SigV4") == true)
        let v2 = Self.refusal { () throws(S3Error) in
            try Self.getObject([("Host", "examplebucket.s3.amazonaws.com"), ("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=")])
        }
        #expect(v2?.code == "InvalidRequest")
        #expect(v2?.status == 400)
        #expect(v2?.message.contains("Signature Version 2 is not supported") == true)
        #expect(v2?.message.contains("boto3 Config(signature_version='s3v4'), aws configure set default.s3.signature_version s3v4") == true)
        let v2Query = Self.refusal { () throws(S3Error) in
            try Self.getObject([("Host", "examplebucket.s3.amazonaws.com")],
                               target: "/test.txt?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D")
        }
        #expect(v2Query?.code == "InvalidRequest")
        #expect(v2Query?.message.contains("Signature Version 2") == true)
        let unknown = Self.refusal { () throws(S3Error) in try Self.getObject([("Host", "h"), ("Authorization", "Bearer abc")]) }
        #expect(unknown?.code == "InvalidArgument")
    }

    @Test func putObject_example_isAccepted() throws {
        let fields: [(String, String)] = [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
        ]
        let auth = try Self.verifier.authenticate(method: "PUT", rawTarget: "/test%24file.text", headers: Self.headers(fields), now: Self.exampleTime)
        #expect(auth.payload == .sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"))
        // `$` sent raw is the same key: the path is decoded, then encoded once.
        #expect(try Self.verifier.authenticate(method: "PUT", rawTarget: "/test$file.text", headers: Self.headers(fields), now: Self.exampleTime).accessKeyID == Self.accessKey)
        #expect(Self.refusal { () throws(S3Error) in
            try Self.verifier.authenticate(method: "PUT", rawTarget: "/test%24file.texts", headers: Self.headers(fields), now: Self.exampleTime)
        }?.code == "SignatureDoesNotMatch")
    }

    @Test func dateHeader_signsWhenThereIsNoXAmzDate() throws {
        // Signed by the Python reference (AWS's algorithm, the examples' key).
        let fields: [(String, String)] = [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-content-sha256", Self.emptyHash),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256,Signature=f51e643fca75b7c8fd918b44dd7f5de20a60f46a456fd2170e1e8248a77144e1"),
        ]
        let auth = try Self.getObject(fields)
        #expect(auth.amzDate == "20130524T000000Z")
        #expect(auth.region == "us-east-1")
        let skewed = Self.refusal { () throws(S3Error) in try Self.getObject(fields, now: Timestamp(secondsSince1970: 1_369_353_600 + 3600)) }
        #expect(skewed?.code == "RequestTimeTooSkewed")
        #expect(skewed?.message.contains("Date") == true)
    }

    @Test func dateHeader_withANumericOrAlphabeticZone_isAccepted() throws {
        // 2026-12-03T07:56:12Z. The -0000 request is botocore's own (S3SigV4Auth with a Date
        // header, which it rewrites with email.utils.formatdate); the others are signed by
        // the same algorithm over the Date text as sent.
        let now = Timestamp(secondsSince1970: 1_796_284_572)
        let cases: [(date: String, signature: String)] = [
            ("Thu, 03 Dec 2026 07:56:12 -0000", "4bae7b0afe62d75774b266661006f46bd617e221399fe27558d37207325e0eb6"),
            ("Thu, 03 Dec 2026 07:56:12 +0000", "4aacd2f1442c9e97f206724601e7cc8d0c2f2ca3296797c7e310060645e4877b"),
            ("Thu, 03 Dec 2026 09:26:12 +0130", "9728c2cef815c59f1ae12eba1ba6b1763ac20a11784c543b0c4dfc30a2bc6b33"),
            ("Wed, 02 Dec 2026 23:56:12 -0800", "80941221c76cc8fae9dea4c8ff203d8e8cc9437bbba09e246bf8c14aa55ec19f"),
            ("Thu, 03 Dec 2026 07:56:12 UT", "f1e36e442731061ef0bcf10dc2f3ae5054aaf9fe654abd17afa7aeed05f920fb"),
            ("Thu, 03 Dec 2026 07:56:12 UTC", "a285fe8293608f42dcdfff9265a07744b17473acff46298449a8c1e3f2694df1"),
            ("3 Dec 2026 07:56:12 Z", "d358a445ad5d4d79b4bdaa06f368c4fac6508af3cdae2714ee36d6e022ecbe8a"),
            ("Thu, 03 Dec 2026 07:56:12 GMT", "7e43b9a96ad8f03adbb16daf7f27ab0283cda0398c21bcf01c499599dcfef107"),
        ]
        for (date, signature) in cases {
            let fields: [(String, String)] = [
                ("Host", "127.0.0.1:9000"), ("Date", date), ("X-Amz-Content-SHA256", Self.emptyHash),
                ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261203/us-east-1/s3/aws4_request, SignedHeaders=date;host;x-amz-content-sha256, Signature=\(signature)"),
            ]
            let auth = try Self.getObject(fields, target: "/photos/test.txt", now: now)
            // The string to sign names the instant in UTC, whatever zone the header used.
            #expect(auth.amzDate == "20261203T075612Z", "Date: \(date)")
        }
    }

    @Test func dateHeader_parsesRFC2822Zones_asOffsets() {
        let utc = Timestamp(secondsSince1970: 1_796_284_572)
        #expect(SigV4Verifier.parseDateHeader("Thu, 03 Dec 2026 07:56:12 -0000") == utc)
        #expect(SigV4Verifier.parseDateHeader("Thu, 03 Dec 2026 09:26:12 +0130") == utc)
        #expect(SigV4Verifier.parseDateHeader("Wed, 02 Dec 2026 23:56:12 -0800") == utc)
        #expect(SigV4Verifier.parseDateHeader("thu, 3 dec 2026 07:56:12 gmt") == utc)
        #expect(SigV4Verifier.parseDateHeader("Thu,03 Dec 2026  07:56 +0000") == Timestamp(secondsSince1970: 1_796_284_560))
        #expect(SigV4Verifier.parseDateHeader("Sat, 29 Feb 2020 00:00:00 +0000") == Timestamp(secondsSince1970: 1_582_934_400))
        // HTTP's obsolete forms still read.
        #expect(SigV4Verifier.parseDateHeader("Thursday, 03-Dec-26 07:56:12 GMT") == utc)
        #expect(SigV4Verifier.parseDateHeader("Thu Dec  3 07:56:12 2026") == utc)
        for bad in ["Thu, 03 Dec 2026 07:56:12", "Thu, 03 Dec 2026 07:56:12 EST", "Thu, 03 Dec 2026 07:56:12 +130",
                    "Thu, 03 Dec 2026 07:56:12 +0160", "Thu, 03 Dec 26 07:56:12 +0000", "Fri, 31 Apr 2026 07:56:12 +0000",
                    "Sat, 29 Feb 2026 00:00:00 +0000", "Thu, 03 Dec 2026 24:00:00 +0000", "Thx, 03 Dec 2026 07:56:12 +0000",
                    "Thu, 03 Dec 2026 07:56:12 +0000 extra", ""] {
            #expect(SigV4Verifier.parseDateHeader(bad) == nil, "\(bad)")
        }
    }

    @Test func getWithQuery_examples_areAccepted() throws {
        func fields(_ signature: String) -> [(String, String)] {
            [("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", Self.emptyHash),
             ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=\(signature)")]
        }
        let lifecycle = fields("fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        #expect(try Self.getObject(lifecycle, target: "/?lifecycle").accessKeyID == Self.accessKey)
        #expect(try Self.getObject(lifecycle, target: "/?lifecycle=").accessKeyID == Self.accessKey)
        let list = fields("34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        #expect(try Self.getObject(list, target: "/?max-keys=2&prefix=J").accessKeyID == Self.accessKey)
        // The canonical query is sorted, whatever order the items came in.
        #expect(try Self.getObject(list, target: "/?prefix=J&max-keys=2").accessKeyID == Self.accessKey)
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(list, target: "/?max-keys=3&prefix=J") }?.code == "SignatureDoesNotMatch")
    }

    @Test func botocoreSignedRequest_withEncodedKeyAndQuery_isAccepted() throws {
        // botocore 1.x S3SigV4Auth, region eu-west-3, at 2026-12-01T12:30:45Z.
        let fields: [(String, String)] = [
            ("Host", "127.0.0.1:9000"), ("Range", "bytes=0-9"), ("X-Amz-Date", "20261201T123045Z"),
            ("X-Amz-Content-SHA256", Self.emptyHash),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261201/eu-west-3/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=ab97c8c954c49d01ca80de922d1f5dde7b4761ef15209c13a2943223ac88181b"),
        ]
        let now = Timestamp(secondsSince1970: 1_796_128_245)
        let verifier = SigV4Verifier(credentials: [S3Credential(accessKeyID: Self.accessKey, secretAccessKey: Self.secret)], region: "eu-west-3")
        let target = "/photos/a%20b/%E2%9C%93%2Bc~d.txt?list-type=2&prefix=a%2Fb%20c&delimiter=%2F&empty"
        #expect(try Self.getObject(fields, target: target, now: now, verifier: verifier).scope == "20261201/eu-west-3/s3/aws4_request")
        // Lower-case escapes and `+` for a space in the query are the same request.
        let same = "/photos/a%20b/%e2%9c%93%2bc~d.txt?list-type=2&prefix=a%2fb+c&delimiter=%2F&empty="
        #expect(try Self.getObject(fields, target: same, now: now, verifier: verifier).accessKeyID == Self.accessKey)
    }

    @Test func canonicalURI_decodesThenEncodes_withoutNormalising() throws {
        #expect(try SigV4Verifier.canonicalURI(Array("/a/./b//c/../d".utf8)) == "/a/./b//c/../d")
        #expect(try SigV4Verifier.canonicalURI(Array("/%7e%41 x/%e2%9c%93".utf8)) == "/~A%20x/%E2%9C%93")
        #expect(try SigV4Verifier.canonicalURI([]) == "/")
        #expect(throws: S3Error.self) { try SigV4Verifier.canonicalURI(Array("/a%2".utf8)) }
        #expect(SigV4Verifier.constantTimeEqual("abc", "abc"))
        #expect(!SigV4Verifier.constantTimeEqual("abc", "abd"))
        #expect(!SigV4Verifier.constantTimeEqual("abc", "abcd"))
    }

    // MARK: The query (presigned) form

    static let presignedTarget = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"

    @Test func presignedURL_example_isAcceptedUntilItExpires() throws {
        let host = [("Host", "examplebucket.s3.amazonaws.com")]
        let auth = try Self.getObject(host, target: Self.presignedTarget, now: Timestamp(secondsSince1970: 1_369_353_600 + 3600))
        #expect(auth.accessKeyID == Self.accessKey)
        #expect(auth.payload == .unsigned)
        #expect(try Self.getObject(host, target: Self.presignedTarget, now: Timestamp(secondsSince1970: 1_369_353_600 + 86_400)).accessKeyID == Self.accessKey)

        let expired = Self.refusal { () throws(S3Error) in
            try Self.getObject(host, target: Self.presignedTarget, now: Timestamp(secondsSince1970: 1_369_353_600 + 86_401))
        }
        #expect(expired?.code == "AccessDenied")
        #expect(expired?.message.hasPrefix("Request has expired") == true)
        let fields = Dictionary(expired?.fields ?? [], uniquingKeysWith: { a, _ in a })
        #expect(fields["X-Amz-Expires"] == "86400")
        #expect(fields["Expires"] == "2013-05-25T00:00:00Z")
        #expect(fields["ServerTime"] == "2013-05-25T00:00:01Z")

        let early = Self.refusal { () throws(S3Error) in
            try Self.getObject(host, target: Self.presignedTarget, now: Timestamp(secondsSince1970: 1_369_353_600 - 1000))
        }
        #expect(early?.code == "AccessDenied")

        let changed = Self.presignedTarget.replacing("/test.txt?", with: "/test.txu?")
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(host, target: changed) }?.code == "SignatureDoesNotMatch")
        let otherHost = [("Host", "otherbucket.s3.amazonaws.com")]
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(otherHost, target: Self.presignedTarget) }?.code == "SignatureDoesNotMatch")
    }

    @Test func presignedURL_badParameters() {
        let host = [("Host", "examplebucket.s3.amazonaws.com")]
        let week = Self.presignedTarget.replacing("X-Amz-Expires=86400", with: "X-Amz-Expires=604801")
        let tooLong = Self.refusal { () throws(S3Error) in try Self.getObject(host, target: week) }
        #expect(tooLong?.code == "AuthorizationQueryParametersError")
        #expect(tooLong?.message.contains("604800") == true)
        let negative = Self.presignedTarget.replacing("X-Amz-Expires=86400", with: "X-Amz-Expires=-5")
        let backwards = Self.refusal { () throws(S3Error) in try Self.getObject(host, target: negative) }
        #expect(backwards?.code == "AuthorizationQueryParametersError")
        #expect(backwards?.message.hasPrefix("X-Amz-Expires must be non-negative") == true, "\(backwards?.message ?? "")")
        let noDate = Self.presignedTarget.replacing("&X-Amz-Date=20130524T000000Z", with: "")
        let missing = Self.refusal { () throws(S3Error) in try Self.getObject(host, target: noDate) }
        #expect(missing?.code == "AuthorizationQueryParametersError")
        #expect(missing?.message.contains("missing X-Amz-Date") == true)
        let both = Self.refusal { () throws(S3Error) in
            try Self.getObject(Self.getObjectHeaders(), target: Self.presignedTarget)
        }
        #expect(both?.code == "InvalidArgument")
        let region = Self.presignedTarget.replacing("us-east-1", with: "us-west-2")
        #expect(Self.refusal { () throws(S3Error) in try Self.getObject(host, target: region) }?.code == "AuthorizationQueryParametersError")
    }

    @Test func botocorePresignedPut_withEncodedKey_isAccepted() throws {
        // botocore S3SigV4QueryAuth, expires=3600, at 2026-12-01T12:30:45Z.
        let target = "/photos/k%C3%A9y%20%2B%20x?partNumber=2&uploadId=abc%2Fdef&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20261201%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261201T123045Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=86dc5af84e0a78f2303d8274019dd034e5fb9db771a2c21fb20b67109c4a5879"
        let auth = try Self.verifier.authenticate(method: "PUT", rawTarget: target, headers: Self.headers([("Host", "127.0.0.1:9000")]),
                                                  now: Timestamp(secondsSince1970: 1_796_128_245 + 10))
        #expect(auth.payload == .unsigned)
        #expect(Self.refusal { () throws(S3Error) in
            try Self.verifier.authenticate(method: "PUT", rawTarget: target.replacing("partNumber=2", with: "partNumber=3"),
                                           headers: Self.headers([("Host", "127.0.0.1:9000")]), now: Timestamp(secondsSince1970: 1_796_128_245 + 10))
        }?.code == "SignatureDoesNotMatch")
    }

    @Test func credential_neverShowsItsSecret() {
        let credential = S3Credential(accessKeyID: "AKID", secretAccessKey: "very-secret")
        #expect(!credential.description.contains("very-secret"))
        #expect(credential.description.contains("AKID"))
        #expect(!"\(credential)".contains("very-secret"))
        #expect(!String(reflecting: credential).contains("very-secret"))
        var dumped = ""
        dump(credential, to: &dumped)
        #expect(!dumped.contains("very-secret"))
    }

    @Test func accessKeyWithSlashes_signsWithTheScopeThatFollowsIt() throws {
        let key = "AKID/WITH/SLASHES"
        let verifier = SigV4Verifier(credentials: [S3Credential(accessKeyID: key, secretAccessKey: Self.secret)], region: "us-east-1")
        let signer = SigV4Signer(accessKeyId: key, secretAccessKey: Self.secret, region: "us-east-1", service: "s3")
        let fields = [("host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", Self.emptyHash), ("x-amz-date", "20130524T000000Z")]
        let signed = try signer.sign(method: "GET", path: "/test.txt", query: [], headers: fields, payloadHash: Self.emptyHash,
                                     date: AmzDate(stamp: "20130524T000000Z"))
        #expect(signed.authorization.contains("Credential=AKID/WITH/SLASHES/20130524/us-east-1/s3/aws4_request"))
        let auth = try Self.getObject(fields + [("authorization", signed.authorization)], verifier: verifier)
        #expect(auth.accessKeyID == key)
        #expect(auth.scope == "20130524/us-east-1/s3/aws4_request")
        #expect(auth.seedSignature == signed.signature)
    }
}
