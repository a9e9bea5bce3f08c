import PlugboardAPI
import PlugboardTesting
import Testing

@Suite("ObjectStorage conveniences")
struct ObjectStorageConveniencesTests {
    @Test func putWithoutContentTypeOrMetadata_usesTheDefaults() async throws {
        let storage = InMemoryObjectStorage()
        let info = try await storage.put("k", data: Array("v".utf8))
        #expect(info.contentType == ObjectContentType.defaultValue)
        #expect(info.metadata.isEmpty)
        let typed = try await storage.put("t", data: [], contentType: "text/plain")
        #expect(typed.contentType == "text/plain")
        let tagged = try await storage.put("m", data: [], metadata: ["owner": "me"])
        #expect(tagged.metadata == ["owner": "me"])
    }

    @Test func exists_isFalseOnlyForNotFound() async throws {
        let storage = InMemoryObjectStorage()
        try await storage.put("here", data: [])
        #expect(try await storage.exists("here"))
        #expect(try await !storage.exists("gone"))
        #expect(await asyncErrorCode { _ = try await storage.exists("") } == .storageInvalidKey)
    }

    @Test func listAllOfAPrefix_followsEveryPage() async throws {
        let storage = InMemoryObjectStorage()
        for index in 0..<2500 {
            try await storage.put("many/\(index)", data: [])
        }
        try await storage.put("other", data: [])
        let all = try await storage.list(prefix: "many/")
        #expect(all.count == 2500)
        #expect(all.map(\.key) == all.map(\.key).sorted(by: ObjectKey.precedes))
        #expect(try await storage.list().count == 2501)
    }

    @Test func listAll_whenTheBackendRepeatsAToken_failsInsteadOfLooping() async throws {
        let storage = RepeatingTokenStorage()
        let error = await #expect(throws: PlugboardError.self) { _ = try await storage.list(prefix: "") }
        #expect(error?.code == .storageFailed)
        #expect(error?.message.contains("does not advance") == true)
    }

    @Test func listAll_whenTheBackendPagesOutOfOrder_fails() async throws {
        let storage = RepeatingTokenStorage(descending: true)
        let error = await #expect(throws: PlugboardError.self) { _ = try await storage.list(prefix: "") }
        #expect(error?.code == .storageFailed)
        #expect(error?.message.contains("out of order") == true)
    }
}

/// A broken backend whose every page says "more follows" with the same token.
private struct RepeatingTokenStorage: ForwardingStorage {
    var descending = false
    let base = InMemoryObjectStorage()

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        let date = Timestamp(secondsSince1970: 0)
        let keys = descending ? ["b", "a"] : ["a"]
        let objects = keys.map { ObjectInfo(key: $0, size: 0, etag: "d41d8cd98f00b204e9800998ecf8427e", lastModified: date) }
        return ObjectListing(objects: continuationToken == nil || descending ? objects : [], nextContinuationToken: descending ? nil : "same")
    }
}
