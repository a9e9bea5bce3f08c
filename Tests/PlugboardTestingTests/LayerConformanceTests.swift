import PlugboardAPI
import PlugboardTesting
import Testing

/// The rule `layer_keeps_reads_streamed`: a layer that leaves a read requirement to the
/// API's default turns ranged reads into whole ones, or at-once reads into waits, and
/// passes every other rule; the rule catches it, from what reaches the storage below.
@Suite struct LayerConformanceTests {
    static let rule = "layer_keeps_reads_streamed"
    static let options = ObjectStorageConformance.Options(includeLargeObjects: false)

    @Test func layerForwardingOnlyTheWholeGet_failsTheRule_andNoOther() async throws {
        let report = await ObjectStorageConformance(layer: { WholeReadLayer(below: $0) }, over: { InMemoryObjectStorage() },
                                                    options: Self.options).run()
        #expect(report.failedRuleNames == [Self.rule], "\(report)")
        guard case .failed(let reason) = report.result(named: Self.rule)?.outcome else { return }
        #expect(reason.contains("reached the storage below as get(_:)"), "\(reason)")
        #expect(reason.contains("forward get(_:range:) to the storage below"), "\(reason)")
    }

    @Test func layerForwardingRangedReadsButNotAtOnce_failsTheRule() async throws {
        let report = await ObjectStorageConformance(layer: { RangedOnlyLayer(below: $0) }, over: { InMemoryObjectStorage() },
                                                    options: .init(only: [Self.rule])).run()
        #expect(report.failedRuleNames == [Self.rule], "\(report)")
        guard case .failed(let reason) = report.result(named: Self.rule)?.outcome else { return }
        #expect(reason.contains("expected an answer at once"), "\(reason)")
        #expect(reason.contains("forward getWithoutWaiting(_:range:)"), "\(reason)")
    }

    @Test func layerForwardingEveryRequirement_passesEveryRule() async throws {
        let report = await ObjectStorageConformance(layer: { FullLayer(below: $0) }, over: { InMemoryObjectStorage() },
                                                    options: Self.options).run()
        #expect(report.allPassed, "\(report)")
        #expect(report.result(named: Self.rule)?.outcome == .passed)
    }

    @Test func storageThatIsNoLayer_skipsTheRule_sayingWhy() async throws {
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }, options: .init(only: [Self.rule])).run()
        #expect(report.result(named: Self.rule)?.outcome == .skipped(reason: "not a layer over a storage the suite observes"))
    }

    /// The layer of a manifest, loaded from a .so over another plugin through the kit:
    /// the suite sees the storage below (the kit's observer), and the layer still wraps "Backing".
    @Test func layerLoadedByTheKit_isObserved_andTheBackingAnswersByItsName() async throws {
        let plugins = try await PluginUnderTest.load([
            .init(product: "MemoryStorage", name: "Backing"),
            .init(product: "QuotaStorage", name: "Quota", config: ["maxBytes": .integer(1 << 20)], wraps: "Backing"),
        ])
        defer { Task { await plugins[1].shutdown() } }
        #expect(plugins.map(\.name) == ["Backing", "Quota"])
        let report = await plugins[1].objectStorageConformance(options: .init(only: [Self.rule])).run()
        #expect(report.result(named: Self.rule)?.outcome == .passed, "\(report)")
        let infos = plugins[1].container.registrations()
        #expect(infos.first { $0.owner == "Quota" }?.wraps == "Backing")
    }

    /// The kit loads a wrapped entry under a name of its own first; a refusal still names
    /// the entry, as the host would.
    @Test func wrappedEntryThatIsRefused_isReportedUnderItsOwnName() async throws {
        do throws(PlugboardError) {
            _ = try await PluginUnderTest.load([
                .init(product: "MemoryStorage", name: "Backing", config: ["failureRate": .integer(2)]),
                .init(product: "QuotaStorage", name: "Quota", config: ["maxBytes": .integer(10)], wraps: "Backing"),
            ])
            Issue.record("a MemoryStorage with failureRate 2 loaded")
        } catch {
            #expect(error.code == .configInvalid, "\(error)")
            #expect("\(error)".contains("\"Backing\""), "\(error)")
            #expect(!"\(error)".contains("under-observer"), "\(error)")
        }
    }
}

/// A layer written from the five whole-object methods and the streamed put (whose absence
/// the suite already catches): ranged reads and reads at once get the API's defaults.
struct WholeReadLayer: ObjectStorage {
    let below: any ObjectStorage

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await below.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await below.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String) async throws -> StoredObject { try await below.get(key) }

    func head(_ key: String) async throws -> ObjectInfo { try await below.head(key) }

    func delete(_ key: String) async throws { try await below.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await below.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}

/// Forwards ranged reads, leaves reads at once to the API's default (nil).
struct RangedOnlyLayer: ObjectStorage {
    let whole: WholeReadLayer

    init(below: any ObjectStorage) { whole = WholeReadLayer(below: below) }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await whole.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await whole.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String) async throws -> StoredObject { try await whole.get(key) }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream { try await whole.below.get(key, range: range) }

    func head(_ key: String) async throws -> ObjectInfo { try await whole.head(key) }

    func delete(_ key: String) async throws { try await whole.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await whole.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}

/// Forwards every requirement.
struct FullLayer: ObjectStorage {
    let ranged: RangedOnlyLayer

    init(below: any ObjectStorage) { ranged = RangedOnlyLayer(below: below) }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await ranged.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await ranged.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String) async throws -> StoredObject { try await ranged.get(key) }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream { try await ranged.get(key, range: range) }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try ranged.whole.below.getWithoutWaiting(key, range: range)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await ranged.head(key) }

    func delete(_ key: String) async throws { try await ranged.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await ranged.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
