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

/// A plugin's own error codes through the S3 endpoint: the status and S3 code its
/// `mapErrors` gave each, in S3's XML with the plugin's message; a code it did not map
/// stays InternalError. CodedErrorPlugin (Tests/Fixtures) is the real .so, loaded by a
/// real host, whose mapping the router asks for.
@Suite struct S3PluginErrorCodeTests {
    static func host() async throws -> PluginHost {
        let folder = BuildProducts.temporaryFolder("s3-error-codes")
        let manifest = "\(folder)/plugins.json"
        let mappings = #"{"quota.exceeded": {"status": 403, "s3Code": "QuotaExceeded"}, "quota.busy": {"status": 503, "s3Code": "SlowDown"}}"#
        let text = #"{"schemaVersion": 1, "environment": "testing", "plugins": [{"name": "Coded", "product": "CodedErrorPlugin", "config": {"mappings": \#(mappings)}}]}"#
        let fd = open(manifest, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let host = try await PluginHost.start(.init(manifestPath: manifest, cacheDirectory: "\(folder)/cache",
                                                    productSearchPath: [PluginUnderTest.productsFolder]))
        #expect(host.records.first?.state == .active, "\(host.records)")
        return host
    }

    static func router(_ host: PluginHost) -> S3Router {
        let credential = S3Credential(accessKeyID: S3RouterTests.keyID, secretAccessKey: S3RouterTests.secret)
        return S3Router(provider: host, configuration: S3Router.Configuration(credentials: [credential]), logger: .disabled)
    }

    @Test func aMappedCode_answersItsStatusAndS3Code_withThePluginsMessage() async throws {
        let host = try await Self.host()
        let router = Self.router(host)
        #expect(await router.respond(to: try S3RouterTests.signed("PUT", "/photos")).status == 200)

        let refused = await router.respond(to: try S3RouterTests.signed("PUT", "/photos/refuse/quota.exceeded/a", body: Array("hi".utf8)))
        #expect(refused.status == 403, "\(S3RouterTests.text(refused))")
        let document = try S3XMLReader.parse(refused.body)
        #expect(document.text("Code") == "QuotaExceeded")
        #expect(document.text("Message")?.contains(#"fixture refuses "photos/refuse/quota.exceeded/a""#) == true,
                "\(document.text("Message") ?? "")")
        #expect(document.text("Message")?.contains("The key asks for code quota.exceeded.") == true)
        #expect(document.text("RequestId") == S3RouterTests.header(refused, "x-amz-request-id"))

        let busy = await router.respond(to: try S3RouterTests.signed("GET", "/photos/refuse/quota.busy/a"))
        #expect(busy.status == 503)
        #expect(try S3XMLReader.parse(busy.body).text("Code") == "SlowDown")
        #expect(S3RouterTests.header(busy, "Retry-After") == "1")

        // Not mapped: InternalError, as before; the storage's own codes keep S3's names.
        let other = await router.respond(to: try S3RouterTests.signed("GET", "/photos/refuse/quota.other/a"))
        #expect(other.status == 500)
        #expect(try S3XMLReader.parse(other.body).text("Code") == "InternalError")
        let missing = await router.respond(to: try S3RouterTests.signed("GET", "/photos/nothing"))
        #expect(try S3XMLReader.parse(missing.body).text("Code") == "NoSuchKey")
        await host.shutdown()
    }

    /// DeleteObjects answers each key's error itself, inside a 200: the mapped S3 code there too.
    @Test func deleteObjects_namesTheMappedS3CodeForEachRefusedKey() async throws {
        let host = try await Self.host()
        let router = Self.router(host)
        #expect(await router.respond(to: try S3RouterTests.signed("PUT", "/photos")).status == 200)
        let document = """
        <Delete><Object><Key>refuse/quota.exceeded/a</Key></Object><Object><Key>refuse/quota.other/b</Key></Object>\
        <Object><Key>fine</Key></Object></Delete>
        """
        let response = await router.respond(to: try S3RouterTests.signed("POST", "/photos?delete", body: Array(document.utf8)))
        #expect(response.status == 200, "\(S3RouterTests.text(response))")
        let root = try S3XMLReader.parse(response.body)
        let errors = root.children("Error")
        #expect(errors.map { $0.text("Code") } == ["QuotaExceeded", "InternalError"], "\(S3RouterTests.text(response))")
        #expect(root.children("Deleted").map { $0.text("Key") } == ["fine"])
        await host.shutdown()
    }

    /// Completing a multipart upload puts the object: a plugin's code refusing that put
    /// reaches the router and is answered by its mapping.
    @Test func completeMultipartUpload_answersTheMappedCodeOfTheFinalPut() async throws {
        let host = try await Self.host()
        let router = Self.router(host)
        #expect(await router.respond(to: try S3RouterTests.signed("PUT", "/photos")).status == 200)
        let key = "/photos/refuse/quota.exceeded/big"
        let created = await router.respond(to: try S3RouterTests.signed("POST", key + "?uploads"))
        #expect(created.status == 200, "\(S3RouterTests.text(created))")
        let uploadID = try #require(try S3XMLReader.parse(created.body).text("UploadId"))
        let part = await router.respond(to: try S3RouterTests.signed("PUT", key + "?partNumber=1&uploadId=\(uploadID)", body: Array("part".utf8)))
        #expect(part.status == 200, "\(S3RouterTests.text(part))")
        let etag = try #require(S3RouterTests.header(part, "ETag"))
        let complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part></CompleteMultipartUpload>"
        let answer = await router.respond(to: try S3RouterTests.signed("POST", key + "?uploadId=\(uploadID)", body: Array(complete.utf8)))
        #expect(answer.status == 403, "\(S3RouterTests.text(answer))")
        #expect(try S3XMLReader.parse(answer.body).text("Code") == "QuotaExceeded")
        await host.shutdown()
    }
}
