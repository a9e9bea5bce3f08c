#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardS3Server
import PlugboardTestSupport
import PlugboardTesting
import Testing

/// S3 clients through the layers a plugin author writes or the project ships: the front
/// end's own records (bucket markers, claims, manifests) and the parts of uploads reach a
/// layer marked (`StorageCall`, PlugboardAPI 1.8), so a content-type policy passes them
/// and judges an upload when it is created, and a quota counts what is the user's. Real
/// .so files (ContentTypePolicyPlugin in Tests/Fixtures, QuotaStorage), loaded by a real
/// host from a manifest, under the router.
@Suite struct S3ThroughLayerTests {
    static func host(layer: String) async throws -> PluginHost {
        let folder = BuildProducts.temporaryFolder("s3-through-layer")
        let manifest = "\(folder)/plugins.json"
        let text = #"{"schemaVersion": 1, "environment": "testing", "plugins": [{"name": "Backing", "product": "MemoryStorage"}, \#(layer)]}"#
        let fd = open(manifest, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let host = try await PluginHost.start(.init(manifestPath: manifest, cacheDirectory: "\(folder)/cache",
                                                    productSearchPath: [PluginUnderTest.productsFolder]))
        #expect(host.records.allSatisfy { $0.state == .active }, "\(host.records)")
        return host
    }

    static let policy = #"{"name": "Policy", "product": "ContentTypePolicyPlugin", "wraps": "Backing", "config": {"allowed": ["text/plain"]}}"#

    static func send(_ router: S3Router, _ method: String, _ target: String, body: [UInt8] = [],
                     headers: [(String, String)] = []) async throws -> HTTPResponse {
        await router.respond(to: try S3RouterTests.signed(method, target, body: body, extra: headers))
    }

    /// The whole storage under a prefix, as the layer's own provider sees it.
    static func keys(_ host: PluginHost, under prefix: String) async throws -> [String] {
        let storage = try host.container.resolve((any ObjectStorage).self)
        return try await storage.list(prefix: prefix, limit: 1000, continuationToken: nil).objects.map(\.key)
    }

    /// A layer that allows only `text/plain`: CreateBucket (whose marker is the front
    /// end's record, `application/octet-stream`) works, an allowed object is stored, a
    /// refused one gets the plugin's mapped answer (415 UnsupportedMediaType, its reason
    /// phrase on the wire), a multipart upload of an allowed type completes, and the
    /// bucket is listed and deleted.
    @Test func aContentTypePolicyLayer_passesTheFrontEndsRecords_andJudgesTheUsersObjects() async throws {
        let host = try await Self.host(layer: Self.policy)
        let router = S3PluginErrorCodeTests.router(host)
        let created = try await Self.send(router, "PUT", "/photos")
        #expect(created.status == 200, "\(S3RouterTests.text(created))")
        let allowed = try await Self.send(router, "PUT", "/photos/a.txt", body: Array("hello".utf8), headers: [("content-type", "text/plain")])
        #expect(allowed.status == 200, "\(S3RouterTests.text(allowed))")

        let refused = try await Self.send(router, "PUT", "/photos/b.bin", body: [1, 2, 3], headers: [("content-type", "application/octet-stream")])
        #expect(refused.status == 415, "\(S3RouterTests.text(refused))")
        #expect(try S3XMLReader.parse(refused.body).text("Code") == "UnsupportedMediaType")
        #expect(String(decoding: refused.serialize(head: false, keepAlive: true, date: "d"), as: UTF8.self)
            .hasPrefix("HTTP/1.1 415 Unsupported Media Type\r\n"))

        let begun = try await Self.send(router, "POST", "/photos/big.txt?uploads", headers: [("content-type", "text/plain")])
        #expect(begun.status == 200, "\(S3RouterTests.text(begun))")
        let uploadID = try #require(try S3XMLReader.parse(begun.body).text("UploadId"))
        let part = try await Self.send(router, "PUT", "/photos/big.txt?partNumber=1&uploadId=\(uploadID)", body: Array("part one".utf8))
        #expect(part.status == 200, "\(S3RouterTests.text(part))")
        let etag = try #require(S3RouterTests.header(part, "ETag"))
        let list = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part></CompleteMultipartUpload>"
        let completed = try await Self.send(router, "POST", "/photos/big.txt?uploadId=\(uploadID)", body: Array(list.utf8))
        #expect(completed.status == 200, "\(S3RouterTests.text(completed))")
        let read = try await Self.send(router, "GET", "/photos/big.txt")
        #expect(read.status == 200 && S3RouterTests.text(read) == "part one", "\(S3RouterTests.text(read))")
        #expect(S3RouterTests.header(read, "Content-Type") == "text/plain")

        let buckets = try await Self.send(router, "GET", "/")
        #expect(S3RouterTests.text(buckets).contains("<Name>photos</Name>"), "\(S3RouterTests.text(buckets))")
        for key in ["a.txt", "big.txt"] { #expect(try await Self.send(router, "DELETE", "/photos/\(key)").status == 204) }
        let deleted = try await Self.send(router, "DELETE", "/photos")
        #expect(deleted.status == 204, "\(S3RouterTests.text(deleted))")
        await host.shutdown()
    }

    /// A multipart upload of a type the layer refuses is refused at CreateMultipartUpload,
    /// with the plugin's answer, before any part is sent, and leaves nothing behind.
    @Test func aRefusedMultipartUpload_isRefusedAtCreate_leavingNothingBehind() async throws {
        let host = try await Self.host(layer: Self.policy)
        let router = S3PluginErrorCodeTests.router(host)
        #expect(try await Self.send(router, "PUT", "/photos").status == 200)
        let before = try await Self.keys(host, under: "")
        let begun = try await Self.send(router, "POST", "/photos/movie.mp4?uploads", headers: [("content-type", "video/mp4")])
        #expect(begun.status == 415, "\(S3RouterTests.text(begun))")
        let document = try S3XMLReader.parse(begun.body)
        #expect(document.text("Code") == "UnsupportedMediaType")
        #expect(document.text("Message")?.contains(#""photos/movie.mp4""#) == true, "\(document.text("Message") ?? "")")
        #expect(try await Self.keys(host, under: "") == before)
        let uploads = try await Self.send(router, "GET", "/photos?uploads")
        #expect(!S3RouterTests.text(uploads).contains("<Upload>"), "\(S3RouterTests.text(uploads))")
        await host.shutdown()
    }

    /// QuotaStorage under S3: the bucket's marker takes neither bytes nor an object; a
    /// part is counted as it is stored, so a quota too small for it refuses that part, not
    /// the Complete after the last; the completed object is not asked to fit beside its
    /// own parts; and an upload on a full quota is refused at CreateMultipartUpload.
    @Test func aQuotaLayer_countsTheUsersBytes_notTheFrontEndsRecords() async throws {
        let quota = #"{"name": "Quota", "product": "QuotaStorage", "wraps": "Backing", "config": {"maxBytes": 1000, "maxObjects": 1}}"#
        let host = try await Self.host(layer: quota)
        let router = S3PluginErrorCodeTests.router(host)
        #expect(try await Self.send(router, "PUT", "/photos").status == 200)

        let begun = try await Self.send(router, "POST", "/photos/big.bin?uploads")
        #expect(begun.status == 200, "\(S3RouterTests.text(begun))")
        let uploadID = try #require(try S3XMLReader.parse(begun.body).text("UploadId"))
        let tooLarge = try await Self.send(router, "PUT", "/photos/big.bin?partNumber=1&uploadId=\(uploadID)", body: [UInt8](repeating: 1, count: 1001))
        #expect(tooLarge.status == 403, "\(S3RouterTests.text(tooLarge))")
        #expect(try S3XMLReader.parse(tooLarge.body).text("Code") == "QuotaExceeded")
        let part = try await Self.send(router, "PUT", "/photos/big.bin?partNumber=1&uploadId=\(uploadID)", body: [UInt8](repeating: 1, count: 600))
        #expect(part.status == 200, "\(S3RouterTests.text(part))")
        let etag = try #require(S3RouterTests.header(part, "ETag"))
        let list = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part></CompleteMultipartUpload>"
        let completed = try await Self.send(router, "POST", "/photos/big.bin?uploadId=\(uploadID)", body: Array(list.utf8))
        #expect(completed.status == 200, "\(S3RouterTests.text(completed))")
        #expect(try await Self.keys(host, under: "_plugboard-s3/uploads/").isEmpty)

        // maxObjects 1 is taken by big.bin: the next upload is refused when it is created.
        let full = try await Self.send(router, "POST", "/photos/more.bin?uploads")
        #expect(full.status == 403, "\(S3RouterTests.text(full))")
        #expect(try S3XMLReader.parse(full.body).text("Message")?.contains("maxObjects is 1 objects") == true)
        #expect(try await Self.keys(host, under: "_plugboard-s3/uploads/").isEmpty)
        await host.shutdown()
    }
}
