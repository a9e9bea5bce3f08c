import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Synchronization
import Testing

/// A clock the tests move: the storage stamps `lastModified` with it.
final class TestClock: Sendable {
    let seconds = Atomic<Int>(1_700_000_000)
    var now: Timestamp { Timestamp(secondsSince1970: seconds.load(ordering: .relaxed)) }
    func advance(_ by: Int) { seconds.add(by, ordering: .relaxed) }
}

/// An in-memory storage behind the operations, and S3Request values built as the router
/// would build them.
struct S3Fixture {
    let clock = TestClock()
    let storage: InMemoryObjectStorage
    let region = "us-west-2"
    /// One gate for the fixture, as the router keeps one for its endpoint.
    let buckets: S3BucketGate

    init(buckets: S3BucketGate = S3BucketGate()) {
        let clock = self.clock
        storage = InMemoryObjectStorage(now: { clock.now })
        self.buckets = buckets
    }

    var context: S3Context { S3Context(storage: storage, logger: .disabled, region: region, buckets: buckets) }

    func request(_ method: String, bucket: String?, key: String? = nil, query: [(String, String)] = [],
                 headers: [(String, String)] = [], body: [UInt8] = []) -> S3Request {
        var target = "/" + (bucket ?? "") + (key.map { "/" + $0 } ?? "")
        if !query.isEmpty { target += "?" + query.map { $0.1.isEmpty ? $0.0 : $0.0 + "=" + $0.1 }.joined(separator: "&") }
        let fields = [(name: "host", value: "s3.test")] + headers.map { (name: $0.0, value: $0.1) }
        let head = RequestHead(method: method, target: target, version: .http11, headers: HTTPHeaders(fields),
                               framing: body.isEmpty ? .none : .length(body.count), keepAlive: true, expectsContinue: false)
        // The body through the router's decoder, as an unsigned payload: its checksum
        // headers are checked and answered as in service. A header the decoder refuses
        // up front leaves the body raw, for the tests of what the operations do with it.
        let checksums = VerifiedChecksums()
        let authentication = S3Authentication(accessKeyID: "AKIDTEST", payload: .unsigned, signingKey: [], scope: "",
                                              amzDate: "", seedSignature: "")
        // The router's rule for which checksum headers describe the body.
        let operation = S3Operation.identify(method: method, bucket: bucket, key: key, query: Set(query.map(\.0)),
                                             copySource: head.headers["x-amz-copy-source"] != nil)?.0
        let bodyHeaders = operation?.checksumHeadersDescribeBody == false ? head.headers.withoutChecksumValues : head.headers
        let decoded = (try? S3BodyDecoder.decode(ObjectBody(body), headers: bodyHeaders, authentication: authentication,
                                                 verified: checksums)) ?? ObjectBody(body)
        return S3Request(head: head, bucket: bucket, key: key, query: query.map { (name: $0.0, value: $0.1) },
                         body: decoded, requestID: "TESTREQUEST", accessKeyID: "AKIDTEST", verifiedChecksums: checksums)
    }

    @discardableResult
    func makeBucket(_ name: String) async throws -> HTTPResponse {
        try await BucketOperations.createBucket(context, request("PUT", bucket: name))
    }

    @discardableResult
    func put(_ bucket: String, _ key: String, _ text: String, headers: [(String, String)] = []) async throws -> HTTPResponse {
        try await ObjectOperations.putObject(context, request("PUT", bucket: bucket, key: key, headers: headers, body: Array(text.utf8)))
    }
}

extension HTTPResponse {
    /// The first value of a header, by name in any case.
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body, whole or streamed.
    func allBytes() async throws -> [UInt8] {
        guard let stream else { return body }
        var bytes: [UInt8] = []
        while let chunk = try await stream.next() { bytes += chunk }
        #expect(bytes.count == stream.length)
        return bytes
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The XML body, parsed back; checks the content type on the way.
    func document() throws -> S3XMLElement {
        #expect(header("Content-Type") == "application/xml")
        return try S3XMLReader.parse(body)
    }
}

/// The S3Error `operation` throws; records an issue when it throws nothing or something else.
func s3Error(_ operation: () async throws -> HTTPResponse, sourceLocation: SourceLocation = #_sourceLocation) async -> S3Error? {
    do {
        let response = try await operation()
        Issue.record("expected an S3Error, got status \(response.status)", sourceLocation: sourceLocation)
        return nil
    } catch let error as S3Error {
        return error
    } catch {
        Issue.record("expected an S3Error, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
