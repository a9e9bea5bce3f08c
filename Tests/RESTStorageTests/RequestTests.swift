import PlugboardAPI
import PlugboardHTTPClient
import RESTStorageClient
import Testing

/// What RESTStorage sends, and that arguments are checked before anything is sent.
@Suite struct RequestTests {
    @Test func putSendsTheBytesContentTypeMetadataAndToken() async throws {
        let remote = ScriptedStorage([Responses.json(200, Responses.info(key: "a/b.txt"))], token: "tok-123")
        let info = try await remote.storage.put("a/b.txt", data: Array("hello".utf8), contentType: "text/plain",
                                                metadata: ["owner": "me"])
        #expect(info == ObjectInfo(key: "a/b.txt", size: 5, etag: Responses.helloETag, contentType: "text/plain",
                                   lastModified: Timestamp(iso8601: Responses.modified)!, metadata: ["owner": "me"]))
        let request = try #require(await remote.requests.first)
        #expect(request.method == .put)
        #expect(request.url == "http://127.0.0.1:9/v1/objects/a%2Fb%2Etxt")
        #expect(request.body == Array("hello".utf8))
        #expect(request.header("content-type") == "text/plain")
        #expect(request.header("x-plugboard-meta-owner") == "me")
        #expect(request.header("authorization") == "Bearer tok-123")
    }

    @Test func putWithoutContentTypeSendsTheDefaultExplicitly() async throws {
        let remote = ScriptedStorage([Responses.json(200, Responses.info(contentType: "application/octet-stream", metadata: "{}"))])
        let info = try await remote.storage.put("k", data: Array("hello".utf8), contentType: nil, metadata: [:])
        #expect(info.contentType == "application/octet-stream")
        let request = try #require(await remote.requests.first)
        #expect(request.header("content-type") == "application/octet-stream")
        #expect(request.header("authorization") == nil)
    }

    @Test func getHeadDeleteAndListUseTheirMethodsAndURLs() async throws {
        let remote = ScriptedStorage([
            Responses.object(extra: ["X-Plugboard-Key": "%2E%2E"]), Responses.object(extra: ["X-Plugboard-Key": "%2E%2E"]),
            .success(HTTPResponse(status: 204)),
            Responses.json(200, #"{"objects": [], "nextCursor": null}"#),
        ])
        let object = try await remote.storage.get("..")
        #expect(object.data == Array("hello".utf8))
        #expect(object.info.key == ".." && object.info.etag == Responses.helloETag && object.info.metadata == ["owner": "me"])
        let info = try await remote.storage.head("..")
        #expect(info == object.info)
        try await remote.storage.delete("..")
        let page = try await remote.storage.list(prefix: "x/", limit: 10, continuationToken: "")
        #expect(page.objects.isEmpty && page.nextContinuationToken == nil)
        let sent = await remote.requests.map { "\($0.method.rawValue) \($0.url)" }
        #expect(sent == [
            "GET http://127.0.0.1:9/v1/objects/%2E%2E", "HEAD http://127.0.0.1:9/v1/objects/%2E%2E",
            "DELETE http://127.0.0.1:9/v1/objects/%2E%2E",
            "GET http://127.0.0.1:9/v1/objects?prefix=x%2F&limit=10&cursor=",
        ])
    }

    /// Key, then content type, then metadata, as every backend; nothing reaches the network.
    @Test func badArgumentsAreRefusedLocallyInTheContractsOrder() async {
        let remote = ScriptedStorage([Responses.refused])
        let longKey = String(repeating: "k", count: 1025)
        #expect(await thrownError { _ = try await remote.storage.put("", data: [], contentType: "\n", metadata: ["A": "x"]) }?.code == .storageInvalidKey)
        #expect(await thrownError { _ = try await remote.storage.put("k", data: [], contentType: "", metadata: ["A": "x"]) }?.code == .storageInvalidArgument)
        #expect(await thrownError { _ = try await remote.storage.put("k", data: [], contentType: nil, metadata: ["A": "x"]) }?.code == .storageInvalidMetadata)
        #expect(await thrownError { _ = try await remote.storage.get(longKey) }?.code == .storageInvalidKey)
        #expect(await thrownError { _ = try await remote.storage.head("a\u{0}b") }?.code == .storageInvalidKey)
        #expect(await thrownError { try await remote.storage.delete("") }?.code == .storageInvalidKey)
        #expect(await thrownError { _ = try await remote.storage.list(prefix: "", limit: 0, continuationToken: nil) }?.code == .storageInvalidArgument)
        #expect(await thrownError { _ = try await remote.storage.list(prefix: longKey, limit: 1, continuationToken: nil) }?.code == .storageInvalidArgument)
        #expect(await remote.requests.isEmpty)
    }
}
