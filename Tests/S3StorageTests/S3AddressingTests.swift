import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PlugboardAPI
import Testing
import PlugboardHTTPClient
import PlugboardSigV4
@testable import S3StorageClient

/// The requests S3Storage builds: path-style and virtual-hosted URLs, signed headers,
/// session tokens, and integrity headers on upload.
@Suite struct S3AddressingTests {
    static func client(endpoint: S3Endpoint, pathStyle: Bool, token: String? = nil) -> S3HTTPClient {
        S3HTTPClient(configuration: S3Configuration(
            bucket: "photos", region: "eu-west-1", endpoint: endpoint, pathStyle: pathStyle,
            credentials: AWSCredentials(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: token, source: "test")),
                     logger: .disabled)
    }

    static let date = AmzDate(stamp: "20261129T230000Z")

    @Test func virtualHostedOnAWS() throws {
        let client = Self.client(endpoint: .aws(region: "eu-west-1"), pathStyle: false)
        let request = try client.urlRequest(for: S3Request(method: "GET", key: "a b/\u{E9}"), date: Self.date)
        #expect(request.url?.absoluteString == "https://photos.s3.eu-west-1.amazonaws.com/a%20b/%C3%A9")
        let authorization = try #require(request.value(forHTTPHeaderField: "Authorization"))
        #expect(authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/eu-west-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="))
        #expect(request.value(forHTTPHeaderField: "x-amz-date") == "20261129T230000Z")
        #expect(request.value(forHTTPHeaderField: "x-amz-content-sha256") == SigV4Signer.emptyPayloadHash)
    }

    @Test func plainHTTPConnectsWhereTheSignedHostHeaderPoints() throws {
        let ipv6 = Self.client(endpoint: try S3Endpoint.parse("http://[::1]:9000"), pathStyle: true)
        let path = try #require(ipv6.plainRequest(try ipv6.signed(S3Request(method: "GET", key: "k"), date: Self.date)))
        #expect(path.host == "::1" && path.port == 9000 && path.hostHeader == "[::1]:9000" && path.target == "/photos/k")
        #expect(!path.sendsLength && path.headers.contains { $0.0 == "Authorization" })
        let named = Self.client(endpoint: try S3Endpoint.parse("http://minio.local"), pathStyle: false)
        let virtual = try #require(named.plainRequest(try named.signed(S3Request(method: "PUT", key: "a b"), date: Self.date)))
        #expect(virtual.host == "photos.minio.local" && virtual.port == 80 && virtual.hostHeader == "photos.minio.local")
        #expect(virtual.target == "/a%20b" && virtual.sendsLength)
    }

    @Test func pathStyleWithPortAndListingQuery() throws {
        let client = Self.client(endpoint: try S3Endpoint.parse("http://127.0.0.1:9000"), pathStyle: true, token: "session")
        let list = try client.urlRequest(for: S3Request(method: "GET", key: nil, query: [("list-type", "2"), ("prefix", "a/b c")]), date: Self.date)
        #expect(list.url?.absoluteString == "http://127.0.0.1:9000/photos?list-type=2&prefix=a%2Fb%20c")
        let object = try client.urlRequest(for: S3Request(method: "DELETE", key: "../x"), date: Self.date)
        #expect(object.url?.absoluteString == "http://127.0.0.1:9000/photos/%2E%2E/x")
        #expect(object.value(forHTTPHeaderField: "x-amz-security-token") == "session")
        #expect(try #require(object.value(forHTTPHeaderField: "Authorization")).contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"))
    }

    /// A dot segment travels as `%2E`s (no HTTP layer may fold it) but is signed as SigV4's
    /// canonical URI has it, dots as they are: S3 and Ceph RGW decode the path and encode it
    /// again before checking, so a signature over `%2E%2E` was SignatureDoesNotMatch there
    /// for the key `..` (found by the conformance suite against RGW).
    @Test func dotSegmentsAreSentEncodedButSignedCanonically() throws {
        let client = Self.client(endpoint: try S3Endpoint.parse("http://127.0.0.1:9000"), pathStyle: true)
        let signer = SigV4Signer(accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "eu-west-1", service: "s3")
        for (key, sent, canonical) in [("..", "/photos/%2E%2E", "/photos/.."), ("../x/./y", "/photos/%2E%2E/x/%2E/y", "/photos/../x/./y"),
                                       ("a b/...", "/photos/a%20b/%2E%2E%2E", "/photos/a%20b/...")] {
            let signed = try client.signed(S3Request(method: "GET", key: key), date: Self.date)
            #expect(signed.path == sent, "\(key)")
            let expected = try signer.sign(
                method: "GET", path: canonical, query: [],
                headers: [("host", "127.0.0.1:9000"), ("x-amz-date", Self.date.stamp), ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash)],
                payloadHash: SigV4Signer.emptyPayloadHash, date: Self.date, signingKey: try signer.signingKey(day: Self.date.day))
            #expect(signed.headers.first { $0.0 == "Authorization" }?.1 == expected.authorization, "\(key): expected the signature of \(canonical)")
        }
    }

    @Test func endpointParsing() throws {
        #expect(try S3Endpoint.parse("https://s3.example:443/") == S3Endpoint(scheme: "https", host: "s3.example", port: nil, isAWS: false))
        #expect(try S3Endpoint.parse("http://[::1]:9000").authority == "[::1]:9000")
        #expect(try S3Endpoint.parse("http://LOCALHOST:80").description == "http://localhost")
        for bad in ["s3.example", "http://", "http://a b", "http://h:0", "http://h:x", "http://u@h", "http://h/p", "http://h?q", "http://[::1"] {
            #expect(throws: S3Endpoint.Problem.self, "\(bad)") { _ = try S3Endpoint.parse(bad) }
        }
    }
}
