import PlugboardAPI
import PlugboardTesting
import Testing

@Suite("InMemoryObjectStorage")
struct InMemoryObjectStorageTests {
    @Test func put_stampsLastModifiedFromTheInjectedClock() async throws {
        let fixed = Timestamp(secondsSince1970: 1_700_000_000)
        let storage = InMemoryObjectStorage(now: { fixed })
        let info = try await storage.put("k", data: Array("v".utf8))
        #expect(info.lastModified == fixed)
        #expect(try await storage.head("k").lastModified == fixed)
    }

    @Test func put_computesMD5ETagAndDefaultContentType() async throws {
        let storage = InMemoryObjectStorage()
        let info = try await storage.put("k", data: Array("abc".utf8))
        #expect(info.etag == "900150983cd24fb0d6963f7d28e17f72")
        #expect(info.size == 3)
        #expect(info.contentType == "application/octet-stream")
    }

    @Test func canonicallyEquivalentKeys_areTwoObjects() async throws {
        let storage = InMemoryObjectStorage()
        try await storage.put("caf\u{E9}", data: Array("composed".utf8))
        try await storage.put("cafe\u{301}", data: Array("decomposed".utf8))
        #expect(storage.count == 2)
        #expect(try await storage.data(for: "caf\u{E9}") == Array("composed".utf8))
        #expect(try await storage.data(for: "cafe\u{301}") == Array("decomposed".utf8))
        try await storage.delete("cafe\u{301}")
        #expect(try await storage.exists("caf\u{E9}"))
        #expect(try await !storage.exists("cafe\u{301}"))
    }

    @Test func listing_pagesInByteOrderWithTokens() async throws {
        let storage = InMemoryObjectStorage()
        let keys = ["p/\u{1D11E}", "p/B", "p/a", "p/e\u{301}", "p/\u{E9}", "q/other", "o/other"]
        for key in keys { try await storage.put(key, data: []) }
        var seen: [String] = []
        var token: String?
        repeat {
            let page = try await storage.list(prefix: "p/", limit: 2, continuationToken: token)
            #expect(page.objects.count <= 2)
            seen += page.objects.map(\.key)
            token = page.nextContinuationToken
        } while token != nil
        #expect(seen.map { Array($0.utf8) } == ["p/B", "p/a", "p/e\u{301}", "p/\u{E9}", "p/\u{1D11E}"].map { Array($0.utf8) })
    }

    @Test func listing_afterDeletingTheTokensKey_continuesAfterIt() async throws {
        let storage = InMemoryObjectStorage()
        for key in ["a", "b", "c", "d"] { try await storage.put(key, data: []) }
        let first = try await storage.list(prefix: "", limit: 2, continuationToken: nil)
        try await storage.delete("b")
        let second = try await storage.list(prefix: "", limit: 2, continuationToken: first.nextContinuationToken)
        #expect(second.objects.map(\.key) == ["c", "d"])
        #expect(second.nextContinuationToken == nil)
    }

    @Test func removeAll_emptiesTheStorage() async throws {
        let storage = InMemoryObjectStorage()
        try await storage.put("a", data: [])
        storage.removeAll()
        #expect(storage.count == 0)
        #expect(try await storage.list(prefix: "").isEmpty)
    }

    @Test func invalidArguments_storeNothing() async throws {
        let storage = InMemoryObjectStorage()
        #expect(await asyncErrorCode { _ = try await storage.put("k", data: [], metadata: ["Bad": "x"]) } == .storageInvalidMetadata)
        #expect(await asyncErrorCode { _ = try await storage.put("k", data: [], contentType: "") } == .storageInvalidArgument)
        #expect(await asyncErrorCode { _ = try await storage.put("", data: []) } == .storageInvalidKey)
        #expect(storage.count == 0)
    }

    @Test func usableAsTheContainersObjectStorage() async throws {
        let container = Container()
        let storage = InMemoryObjectStorage()
        try container.register((any ObjectStorage).self) { _ in storage }
        let resolved: any ObjectStorage = try container.resolve()
        try await resolved.put("k", data: Array("v".utf8))
        #expect(try await storage.data(for: "k") == Array("v".utf8))
    }
}
