import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import Testing

/// libQuotaStorage.so over a backing, both loaded as a manifest would list them (the
/// layer `wraps` the backing): the conformance suite through the layer, and its limits.
@Suite struct QuotaStorageTests {
    static let exceeded: PlugboardError.Code = "quota.exceeded"

    /// MemoryStorage as "Backing", QuotaStorage as "Quota" over it; answers the layer's
    /// loaded plugin.
    static func layered(_ config: [String: ConfigValue], backing: PluginUnderTest.Entry = .init(product: "MemoryStorage", name: "Backing"))
        async throws -> LoadedPlugin {
        let plugins = try await PluginUnderTest.load([
            backing,
            .init(product: "QuotaStorage", name: "Quota", config: config, rank: -10, wraps: backing.name),
        ])
        return plugins[1]
    }

    static func bytes(_ count: Int) -> [UInt8] { Array(repeating: 7, count: count) }

    @Test func passesTheWholeConformanceSuite_asTheLayer_notTheBacking() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(1 << 30), "prefixes": .object(["quota-proof/": .integer(10)])])
        defer { Task { await quota.shutdown() } }
        let report = await quota.objectStorageConformance().run()
        try report.requireAllPassed()
        // Observed from below (the kit's observer over the wrapped plugin): ranged and
        // at-once reads go down as they are.
        #expect(report.result(named: "layer_keeps_reads_streamed")?.outcome == .passed, "\(report)")
        // The storage the suite resolved is the layer (its rank is the lowest, yet it stands
        // above the backing): a put past its prefix limit through that same service is refused.
        let storage = try quota.storage()
        let error = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("quota-proof/x", data: Self.bytes(11), contentType: nil, metadata: [:])
        }
        #expect(error?.code == Self.exceeded)
        #expect(error?.message.contains(#"prefixes["quota-proof/"] is 10 bytes"#) == true, "\(String(describing: error))")
        let infos = quota.container.registrations()
        #expect(infos.first { $0.owner == "Quota" }?.isActive == true)
        #expect(infos.first { $0.owner == "Quota" }?.wraps == "Backing")
    }

    @Test func overwritesReplaceTheOldSize_deletesGiveBytesBack() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(1000)])
        defer { Task { await quota.shutdown() } }
        let storage = try quota.storage()
        _ = try await storage.put("a", data: Self.bytes(600), contentType: nil, metadata: [:])
        _ = try await storage.put("a", data: Self.bytes(300), contentType: nil, metadata: [:])
        _ = try await storage.put("b", data: Self.bytes(600), contentType: nil, metadata: [:])
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("c", data: Self.bytes(200), contentType: nil, metadata: [:])
        }
        #expect(refused?.code == Self.exceeded)
        #expect(refused?.detail?.contains("found 900 in use") == true, "\(String(describing: refused))")
        #expect(refused?.hint?.contains("raise maxBytes") == true)
        await #expect(throws: PlugboardError.self) { _ = try await storage.get("c") }
        try await storage.delete("b")
        _ = try await storage.put("c", data: Self.bytes(200), contentType: nil, metadata: [:])
    }

    @Test func maxObjects_countsKeys_notOverwrites() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(1000), "maxObjects": .integer(2)])
        defer { Task { await quota.shutdown() } }
        let storage = try quota.storage()
        _ = try await storage.put("x", data: [1], contentType: nil, metadata: [:])
        _ = try await storage.put("y", data: [1], contentType: nil, metadata: [:])
        _ = try await storage.put("x", data: [2], contentType: nil, metadata: [:])
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("z", data: [1], contentType: nil, metadata: [:])
        }
        #expect(refused?.message.contains("maxObjects is 2 objects") == true, "\(String(describing: refused))")
    }

    @Test func racingPuts_neverPassTheLimitTogether() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(1000)])
        defer { Task { await quota.shutdown() } }
        let storage = try quota.storage()
        let outcomes = await withTaskGroup(of: PlugboardError.Code?.self) { group in
            for i in 0..<10 {
                group.addTask {
                    do {
                        _ = try await storage.put("race/\(i)", data: Self.bytes(200), contentType: nil, metadata: [:])
                        return nil
                    } catch {
                        return (error as? PlugboardError)?.code ?? .storageFailed
                    }
                }
            }
            var all: [PlugboardError.Code?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.filter { $0 == nil }.count == 5)
        #expect(outcomes.filter { $0 == Self.exceeded }.count == 5)
        let stored = try await storage.list(prefix: "race/", limit: 100, continuationToken: nil)
        #expect(stored.objects.map(\.size).reduce(0, +) == 1000)
    }

    @Test func aStreamedBodyOfUnknownLength_isStoppedAtTheLimit_andItsReservationGivenBack() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(1000)])
        defer { Task { await quota.shutdown() } }
        let storage = try quota.storage()
        let chunks = AsyncThrowingStream<[UInt8], any Error> { continuation in
            for _ in 0..<3 { continuation.yield(Self.bytes(500)) }
            continuation.finish()
        }
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("streamed", body: ObjectBody(length: nil, chunks), contentType: nil, metadata: [:],
                                      condition: .none)
        }
        #expect(refused?.code == Self.exceeded)
        await #expect(throws: PlugboardError.self) { _ = try await storage.head("streamed") }
        _ = try await storage.put("whole", data: Self.bytes(1000), contentType: nil, metadata: [:])
    }

    @Test func theCountSurvivesARestart_byListingTheBackingAtStart() async throws {
        let root = PluginFixtures.temporaryFolder("quota-restart")
        defer { PluginFixtures.removeTree(root) }
        let files = PluginUnderTest.Entry(product: "FileStorage", name: "Files", config: ["root": .string(root)])
        let first = try await Self.layered(["maxBytes": .integer(1000)], backing: files)
        _ = try await first.storage().put("kept", data: Self.bytes(600), contentType: nil, metadata: [:])
        await first.shutdown()
        let second = try await Self.layered(["maxBytes": .integer(1000)], backing: files)
        defer { Task { await second.shutdown() } }
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await second.storage().put("more", data: Self.bytes(600), contentType: nil, metadata: [:])
        }
        #expect(refused?.code == Self.exceeded)
    }

    /// User metadata takes room as data does (issue 33: 200 empty objects with 2 KiB of
    /// metadata each took 824 KiB under maxBytes 1000), live and when counted at start.
    @Test func userMetadata_countsAgainstTheQuota_liveAndAfterARestart() async throws {
        let full = ["note": String(repeating: "x", count: 2044)]
        let quota = try await Self.layered(["maxBytes": .integer(1000)])
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await quota.storage().put("empty", data: [], contentType: nil, metadata: full)
        }
        #expect(refused?.code == Self.exceeded)
        #expect(refused?.detail?.contains("2048 more asked") == true, "\(String(describing: refused))")
        await quota.shutdown()

        let root = PluginFixtures.temporaryFolder("quota-metadata")
        defer { PluginFixtures.removeTree(root) }
        let files = PluginUnderTest.Entry(product: "FileStorage", name: "Files", config: ["root": .string(root)])
        let first = try await Self.layered(["maxBytes": .integer(10_000)], backing: files)
        let half = ["note": String(repeating: "y", count: 496)]
        for key in ["a", "b"] { _ = try await first.storage().put(key, data: [], contentType: nil, metadata: half) }
        await first.shutdown()
        let second = try await Self.layered(["maxBytes": .integer(1200)], backing: files)
        defer { Task { await second.shutdown() } }
        let after = await #expect(throws: PlugboardError.self) {
            _ = try await second.storage().put("c", data: Self.bytes(300), contentType: nil, metadata: [:])
        }
        #expect(after?.detail?.contains("found 1000 in use") == true, "\(String(describing: after))")
    }

    /// What the S3 front end marks as its own (StorageCall, PlugboardAPI 1.8): a record
    /// passes uncounted and is never refused; a part counts its bytes against the prefixes
    /// of the object it is for, but no object slot; the object that completes an upload
    /// is allowed its parts' bytes; a new upload is refused when no object would fit.
    @Test func theFrontEndsRecordsPassUncounted_partsCount_andACompletionIsAllowedItsParts() async throws {
        let quota = try await Self.layered(["maxBytes": .integer(100), "maxObjects": .integer(1), "prefixes": .object(["logs/": .integer(10)])])
        defer { Task { await quota.shutdown() } }
        let storage = try quota.storage()
        try await StorageCall.with(.record) {
            _ = try await storage.put("_plugboard-s3/buckets/logs", data: Self.bytes(500), contentType: nil, metadata: [:])
        }
        let part = StorageCall(purpose: .part, object: "logs/x", upload: "U1")
        try await StorageCall.with(part) {
            _ = try await storage.put("_plugboard-s3/uploads/logs/U1/part-00001", data: Self.bytes(8), contentType: nil, metadata: [:])
        }
        let second = await #expect(throws: PlugboardError.self) {
            try await StorageCall.with(part) {
                _ = try await storage.put("_plugboard-s3/uploads/logs/U1/part-00002", data: Self.bytes(8), contentType: nil, metadata: [:])
            }
        }
        #expect(second?.message.contains(#"of an upload of "logs/x""#) == true, "\(String(describing: second))")
        #expect(second?.message.contains(#"prefixes["logs/"] is 10 bytes"#) == true, "\(String(describing: second))")
        // The completed object holds what the part holds, while the part is still there.
        try await StorageCall.with(StorageCall(purpose: .object, upload: "U1")) {
            _ = try await storage.put("logs/x", data: Self.bytes(8), contentType: nil, metadata: [:])
        }
        try await StorageCall.with(.record) { try await storage.delete("_plugboard-s3/uploads/logs/U1/part-00001") }
        // The one object slot is taken: an upload announced now is refused at once.
        let announced = await #expect(throws: PlugboardError.self) {
            try await StorageCall.with(StorageCall(purpose: .upload, object: "logs/y", upload: "U2")) {
                _ = try await storage.put("_plugboard-s3/uploads/logs/U2/upload", data: Self.bytes(100), contentType: "text/plain", metadata: [:])
            }
        }
        #expect(announced?.message.contains("maxObjects is 1 objects") == true, "\(String(describing: announced))")
        // The record takes no room, and the part gave its bytes back: all 100 are the user's.
        try await storage.delete("logs/x")
        _ = try await storage.put("big", data: Self.bytes(100), contentType: nil, metadata: [:])
    }

    @Test func aBadConfig_isRefused_namingTheKey() async throws {
        for (config, words) in [([:], "maxBytes"), (["maxBytes": .integer(-1)], "negative"),
                                (["maxBytes": .integer(10), "prefixes": .object(["": .integer(1)])], "empty prefix"),
                                (["maxBytes": .integer(10), "maxByte": .integer(1)], "Did you mean \"maxBytes\"")] as [([String: ConfigValue], String)] {
            let error = await #expect(throws: PlugboardError.self) { _ = try await Self.layered(config) }
            #expect(error?.code == .configInvalid, "\(String(describing: error))")
            #expect("\(error.map { "\($0.message) \($0.detail ?? "")" } ?? "")".contains(words), "\(String(describing: error))")
        }
    }
}
