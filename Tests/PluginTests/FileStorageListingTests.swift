import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import Testing

/// Listing straight from the folders, at a size where an O(n²) walk would blow the time
/// limit (a liveness bound for loaded machines; speed is measured by benchmarks, not here).
@Suite struct FileStorageListingTests {
    // 3 minutes: the suite shares two cores with preflight children and servers, and
    // creating files in a /tmp with many recent deletions costs up to 500 us each here.
    @Test(.timeLimit(.minutes(3)))
    func listing10000Objects_inPagesOf1000_isOrderedAndComplete() async throws {
        let fixture = FileStorageFixture("filestorage-10k")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        let keys = (0..<10_000).map { "bulk/\($0 % 10)/item-\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for slice in 0..<8 {
                group.addTask {
                    for index in stride(from: slice, to: keys.count, by: 8) {
                        _ = try await storage.put(keys[index], data: [UInt8(index & 0xFF)], contentType: nil, metadata: [:])
                    }
                }
            }
            try await group.waitForAll()
        }

        var listed: [String] = []
        var token: String?
        repeat {
            let page = try await storage.list(prefix: "", limit: 1000, continuationToken: token)
            #expect(page.objects.count <= 1000)
            listed += page.objects.map(\.key)
            token = page.nextContinuationToken
        } while token != nil
        #expect(listed.count == 10_000)
        #expect(listed.map { Array($0.utf8) } == keys.sorted(by: ObjectKey.precedes).map { Array($0.utf8) })

        let prefixed = try await storage.list(prefix: "bulk/3/item-99", limit: 1000, continuationToken: nil)
        let expected = keys.filter { ObjectKey.hasPrefix($0, "bulk/3/item-99") }.sorted(by: ObjectKey.precedes)
        #expect(expected.count == 11)
        #expect(prefixed.objects.map(\.key) == expected)
        #expect(prefixed.nextContinuationToken == nil)
    }

    /// Keys around the 125-byte folder boundaries (FileStorage's nested names), cut in the
    /// middle of multi-byte characters, listed with many prefixes and page sizes: the same
    /// keys, in the same order, as the in-memory reference backend lists.
    @Test func listingKeysThatSpanFolders_matchesTheReferenceBackend() async throws {
        let fixture = FileStorageFixture("filestorage-nested")
        defer { fixture.remove() }
        let storage = try await fixture.storage(fsync: false)
        let reference = InMemoryObjectStorage()
        var random = SplitMix(seed: 0x5EED)
        let alphabet = ["a", "b", "/", "\u{E9}", "\u{1F600}", "\u{7F}"]
        func text(_ bytes: Int) -> String {
            var out = ""
            while out.utf8.count < bytes { out += alphabet[random.next(alphabet.count)] }
            return out
        }
        let stems = (0..<12).map { _ in text(100 + random.next(300)) }
        var keys: [String] = stems
        for _ in 0..<150 {
            let stem = stems[random.next(stems.count)]
            let cut = String(String.UnicodeScalarView(stem.unicodeScalars.prefix(random.next(stem.unicodeScalars.count + 1))))
            let key = cut + text(random.next(200))
            if (1...1024).contains(key.utf8.count) { keys.append(key) }
        }
        keys += ["a", "b", String(repeating: "a", count: 125), String(repeating: "a", count: 126), String(repeating: "a", count: 250)]
        for key in keys {
            _ = try await storage.put(key, data: [1], contentType: nil, metadata: [:])
            _ = try await reference.put(key, data: [1], contentType: nil, metadata: [:])
        }

        var prefixes = ["", "zzz", String(repeating: "a", count: 125), String(repeating: "a", count: 126)]
        for _ in 0..<40 {
            let key = keys[random.next(keys.count)]
            prefixes.append(String(String.UnicodeScalarView(key.unicodeScalars.prefix(random.next(key.unicodeScalars.count + 1)))))
        }
        for prefix in prefixes {
            let expected = try await Self.allKeys(reference, prefix: prefix, limit: 1000)
            for limit in [1, 3, 1000] {
                let found = try await Self.allKeys(storage, prefix: prefix, limit: limit)
                #expect(found.map { Array($0.utf8) } == expected.map { Array($0.utf8) },
                        "prefix of \(prefix.utf8.count) bytes, limit \(limit)")
            }
        }
    }

    /// Every key under `prefix`, following continuation tokens; checks that pages are full
    /// until the last, which has no token.
    static func allKeys(_ storage: any ObjectStorage, prefix: String, limit: Int) async throws -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            let page = try await storage.list(prefix: prefix, limit: limit, continuationToken: token)
            #expect(page.objects.count <= limit)
            if page.nextContinuationToken != nil { #expect(page.objects.count == limit) }
            keys += page.objects.map(\.key)
            token = page.nextContinuationToken
        } while token != nil
        return keys
    }
}

/// A small seeded generator, so the nested-listing test is the same on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    /// A number in 0..<bound.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(max(bound, 1)))
    }
}
