import PlugboardAPI
import PlugboardHTTPClient
import RESTStorageClient
import Testing

/// Success answers that do not hold what the contract says are `storage.failed`, naming
/// what was expected and what was found; nothing traps.
@Suite struct DecodingTests {
    @Test func listingPagesAreDecodedWithTheCursorPassedThrough() async throws {
        let body = #"{"objects": [\#(Responses.info(key: "p/a")), {"key": "p/b", "size": 0, "etag": "d41d8cd98f00b204e9800998ecf8427e", "lastModified": "2026-01-01T00:00:00Z"}], "nextCursor": "cC9i"}"#
        let remote = ScriptedStorage([Responses.json(200, body)])
        let page = try await remote.storage.list(prefix: "p/", limit: 2, continuationToken: nil)
        #expect(page.objects.map(\.key) == ["p/a", "p/b"])
        #expect(page.objects[0].metadata == ["owner": "me"] && page.objects[0].contentType == "text/plain")
        #expect(page.objects[0].unknown.isEmpty)
        // Left out: the remote host does not know them; carried on as unknown, not as the defaults.
        #expect(page.objects[1].unknown == [.contentType, .metadata])
        #expect(page.objects[1].contentType == ObjectContentType.defaultValue && page.objects[1].metadata.isEmpty)
        #expect(page.objects[1].lastModified == Timestamp(iso8601: "2026-01-01T00:00:00Z"))
        #expect(page.nextContinuationToken == "cC9i")
    }

    /// `plugboard serve` over S3Storage lists with null content type and metadata.
    @Test func nullContentTypeAndMetadataAreCarriedOnAsUnknown() async throws {
        let entry = { (contentType: String, metadata: String) in
            #"{"key": "p/x", "size": 0, "etag": "d41d8cd98f00b204e9800998ecf8427e", "contentType": \#(contentType), "lastModified": "2026-01-01T00:00:00Z", "metadata": \#(metadata)}"#
        }
        let body = #"{"objects": [\#(entry("null", "null")), \#(entry("\"text/csv\"", "null")), \#(entry("null", "{}"))], "nextCursor": null}"#
        let remote = ScriptedStorage([Responses.json(200, body)])
        let objects = try await remote.storage.list(prefix: "p/", limit: 3, continuationToken: nil).objects
        #expect(objects.map(\.unknown) == [[.contentType, .metadata], [.metadata], [.contentType]])
        #expect(objects.map(\.knownContentType) == [nil, "text/csv", nil])
        #expect(objects.map(\.knownMetadata) == [nil, nil, [:]])
    }

    @Test(arguments: [
        ("[]", "expected a listing JSON object, found an array"),
        ("{\"objects\": []}", "expected a string or null at nextCursor, found nothing"),
        ("{\"objects\": {}, \"nextCursor\": null}", "expected an array at objects, found an object"),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": \"5\"}], \"nextCursor\": null}", "size in bytes (an integer of 0 or more) at objects[0].size, found the string \"5\""),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": -1}], \"nextCursor\": null}", "found the number -1"),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": 1.5}], \"nextCursor\": null}", "found the number 1.5"),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": 1, \"etag\": \"\\\"abc\\\"\"}], \"nextCursor\": null}", "32 lowercase hex digits at objects[0].etag"),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": 1, \"etag\": \"d41d8cd98f00b204e9800998ecf8427e\", \"lastModified\": \"yesterday\"}], \"nextCursor\": null}", "ISO 8601 timestamp at objects[0].lastModified, found \"yesterday\""),
        ("{\"objects\": [{\"key\": \"\", \"size\": 1}], \"nextCursor\": null}", "a valid object key at objects[0].key"),
        ("{\"objects\": [\(Responses.info(key: "elsewhere"))], \"nextCursor\": null}", "keys that start with the prefix \"p/\", found the key \"elsewhere\""),
        ("{\"objects\": [\(Responses.info(key: "p/a")), \(Responses.info(key: "p/b"))], \"nextCursor\": null}", "at most 1 objects, found 2"),
        ("<html>oops</html>", "found the body \"<html>oops</html>\", which is not JSON"),
        // Read strictly: a key given twice is not taken as either of its values, and a
        // boolean is not a size.
        ("{\"objects\": [], \"nextCursor\": null, \"nextCursor\": \"eA\"}", "which is not JSON (the server's answer:1:37: duplicate key \"nextCursor\""),
        ("{\"objects\": [{\"key\": \"p/a\", \"size\": true}], \"nextCursor\": null}", "at objects[0].size, found the boolean true"),
    ])
    func malformedListingsAreFailed(body: String, text: String) async {
        let remote = ScriptedStorage([Responses.json(200, body)])
        let error = await thrownError { _ = try await remote.storage.list(prefix: "p/", limit: 1, continuationToken: nil) }
        #expect(error?.code == .storageFailed)
        #expect(error?.detail?.contains(text) == true, "\(String(describing: error?.detail))")
    }

    @Test func aPutAnswerMustDescribeWhatWasSent() async {
        let cases: [(String, String)] = [
            (Responses.info(key: "other"), "the key \"k\" in the object info, found \"other\""),
            (Responses.info(size: 4), "the size 5 (the bytes sent), found 4"),
            (Responses.info(etag: "d41d8cd98f00b204e9800998ecf8427e"), "the ETag \(Responses.helloETag) (the MD5 of the bytes sent)"),
            (Responses.info(contentType: "text/html"), "the content type \"text/plain\" that was sent"),
            (Responses.info(metadata: "{}"), "the 1 metadata entries that were sent"),
            (#"{"key": "k"}"#, "a size in bytes"),
        ]
        for (body, text) in cases {
            let remote = ScriptedStorage([Responses.json(200, body)])
            let error = await thrownError {
                _ = try await remote.storage.put("k", data: Array("hello".utf8), contentType: "text/plain", metadata: ["owner": "me"])
            }
            #expect(error?.code == .storageFailed)
            #expect(error?.detail?.contains(text) == true, "\(String(describing: error?.detail))")
        }
    }

    @Test func getAndHeadHeadersAreChecked() async {
        let cases: [(Result<HTTPResponse, TransportFailure>, String)] = [
            (Responses.object(extra: ["ETag": "W/\"x\""]), "an ETag header of 32 lowercase hex digits in quotes, found \"W/\\\"x\\\"\""),
            (Responses.object(extra: ["X-Plugboard-Last-Modified": "Sun, 29 Nov 2026 20:42:08 GMT"]), "an ISO 8601 timestamp in X-Plugboard-Last-Modified"),
            (Responses.object(extra: ["Content-Length": "9"]), "a body of 9 bytes (its Content-Length), found 5 bytes"),
            (Responses.object("hellO"), "a body whose MD5 is the ETag \(Responses.helloETag)"),
        ]
        for (outcome, text) in cases {
            let remote = ScriptedStorage([outcome])
            let error = await thrownError { _ = try await remote.storage.get("k") }
            #expect(error?.code == .storageFailed)
            #expect(error?.detail?.contains(text) == true, "\(String(describing: error?.detail))")
        }
        let headless = ScriptedStorage([.success(HTTPResponse(status: 200, headers: ["ETag": "\"\(Responses.helloETag)\"", "X-Plugboard-Key": "k"]))])
        let error = await thrownError { _ = try await headless.storage.head("k") }
        #expect(error?.code == .storageFailed)
        #expect(error?.detail?.contains("expected a Content-Length header, found none") == true)
    }

    @Test func metadataHeadersAreLowerCasedAndTrimmed() async throws {
        let remote = ScriptedStorage([Responses.object(extra: ["X-PLUGBOARD-META-Build-Id": " 42 ", "X-Plugboard-Meta-Empty": ""])])
        let info = try await remote.storage.head("k")
        #expect(info.metadata == ["owner": "me", "build-id": "42", "empty": ""])
    }
}
