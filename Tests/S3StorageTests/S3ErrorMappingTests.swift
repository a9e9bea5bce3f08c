import PlugboardAPI
import PlugboardHTTPClient
import Testing
import PlugboardSigV4
@testable import S3StorageClient

/// S3 error codes onto ObjectStorage error codes, with hints; secrets never in the text.
@Suite struct S3ErrorMappingTests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    static let token = "FQoGZXIvYXdzEXAMPLESESSIONTOKEN"
    static let configuration = S3Configuration(
        bucket: "photos", region: "eu-west-1", endpoint: .aws(region: "eu-west-1"), pathStyle: false,
        credentials: AWSCredentials(accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: secret, sessionToken: token, source: "environment"))
    static let mapping = S3ErrorMapping(configuration: configuration, redactor: S3Redactor(configuration.credentials))

    static func map(_ code: String?, status: Int, kind: S3Operation.Kind = .get, message: String = "m",
                    fields: [String: String] = [:]) -> PlugboardError {
        mapping.error(S3Operation(kind: kind, key: "a/b", bucket: "photos"), status: status,
                      body: code.map { S3ErrorBody(code: $0, message: message, requestID: "R1", fields: fields) })
    }

    @Test(arguments: [
        ("NoSuchKey", 404, PlugboardError.Code.storageNotFound),
        ("AccessDenied", 403, .storageAccessDenied),
        ("InvalidAccessKeyId", 403, .storageAccessDenied),
        ("SignatureDoesNotMatch", 403, .storageAccessDenied),
        ("RequestTimeTooSkewed", 403, .storageAccessDenied),
        ("ExpiredToken", 400, .storageAccessDenied),
        ("NoSuchBucket", 404, .storageFailed),
        ("SlowDown", 503, .storageUnavailable),
        ("ServiceUnavailable", 503, .storageUnavailable),
        ("InternalError", 500, .storageUnavailable),
        ("MetadataTooLarge", 400, .storageInvalidMetadata),
        ("EntityTooLarge", 400, .storageInvalidArgument),
        ("BadDigest", 400, .storageFailed),
        ("SomethingNew", 400, .storageFailed),
    ])
    func codes(code: String, status: Int, expected: PlugboardError.Code) {
        #expect(Self.map(code, status: status).code == expected)
    }

    @Test func bodylessAnswersOfHead() {
        #expect(Self.map(nil, status: 404, kind: .head).code == .storageNotFound)
        #expect(Self.map(nil, status: 403, kind: .head).code == .storageAccessDenied)
        #expect(Self.map(nil, status: 503, kind: .head).code == .storageUnavailable)
        #expect(Self.map(nil, status: 502, kind: .head).code == .storageUnavailable)
    }

    @Test func notFoundIsTheSharedError() {
        let error = Self.map("NoSuchKey", status: 404)
        #expect(error.message == PlugboardError.objectNotFound(key: "a/b").message)
    }

    @Test func invalidArgumentOnlyForListings() {
        #expect(Self.map("InvalidArgument", status: 400, kind: .list).code == .storageInvalidArgument)
        #expect(Self.map("InvalidArgument", status: 400, kind: .put).code == .storageFailed)
    }

    @Test func signatureMismatchHintsAtKeysAndClock() throws {
        let error = Self.map("SignatureDoesNotMatch", status: 403)
        let hint = try #require(error.hint)
        #expect(hint.contains("secretAccessKey") && hint.contains("clock") && hint.contains("region"))
        #expect(hint.contains("AKIA...") && !hint.contains("AKIAIOSFODNN7EXAMPLE"))
    }

    @Test func skewNamesBothClocks() throws {
        let error = Self.map("RequestTimeTooSkewed", status: 403, fields: ["ServerTime": "2026-11-29T01:00:00Z"])
        let hint = try #require(error.hint)
        #expect(hint.contains("2026-11-29T01:00:00Z") && hint.contains("NTP"))
    }

    @Test func noSuchBucketNamesTheBucket() throws {
        let error = Self.map("NoSuchBucket", status: 404)
        #expect(error.message.contains("\"photos\" does not exist"))
        #expect(try #require(error.hint).contains("Create the bucket"))
    }

    @Test func unknownCodesCarryCodeAndMessage() throws {
        let error = Self.map("QuotaExceeded", status: 400, message: "You have too many things.")
        #expect(error.message.contains("QuotaExceeded"))
        let detail = try #require(error.detail)
        #expect(detail.contains("You have too many things.") && detail.contains("R1") && detail.contains("HTTP 400"))
    }

    @Test func retryableAnswers() {
        #expect(S3ErrorMapping.isRetryable(status: 500, code: nil))
        #expect(S3ErrorMapping.isRetryable(status: 503, code: "SlowDown"))
        #expect(S3ErrorMapping.isRetryable(status: 400, code: "RequestTimeout"))
        #expect(!S3ErrorMapping.isRetryable(status: 404, code: "NoSuchKey"))
        #expect(!S3ErrorMapping.isRetryable(status: 403, code: "SignatureDoesNotMatch"))
    }

    /// A server that echoes the secret or the session token (a misbehaving proxy, a debug
    /// build) still gets neither into an error's text.
    @Test func secretsEchoedByTheServerAreRedacted() {
        for code in ["SignatureDoesNotMatch", "AccessDenied", "Weird", "SlowDown", "NoSuchBucket"] {
            let error = Self.map(code, status: 403, message: "your key \(Self.secret) and token \(Self.token)",
                                 fields: ["BucketName": Self.token, "Region": Self.secret])
            let text = "\(error)"
            #expect(!text.contains(Self.secret) && !text.contains(Self.token), "\(code): \(text)")
            #expect(text.contains("<redacted>"))
        }
    }

    @Test func credentialsNeverPrintTheirSecrets() {
        let text = "\(Self.configuration.credentials)"
        #expect(!text.contains(Self.secret) && !text.contains(Self.token) && !text.contains("AKIAIOSFODNN7EXAMPLE"))
    }

    @Test func retryDelaysGrowAndStayUnderTheCap() {
        let policy = RetryPolicy(maxRetries: 5, baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        for attempt in 0..<30 {
            let ceiling = min(Duration.seconds(1), .milliseconds(100) * (1 << min(attempt, 20)))
            for _ in 0..<20 {
                let delay = policy.delay(beforeRetry: attempt)
                #expect(delay >= .zero && delay <= ceiling)
            }
        }
    }
}
