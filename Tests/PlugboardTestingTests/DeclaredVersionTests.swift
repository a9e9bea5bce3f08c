import PlugboardAPI
import PlugboardTesting
import Testing

/// Each rule carries the API version that introduced it; a storage is held to the rules of
/// the version it declares, and told of the newer ones it does not meet, as warnings.
@Suite struct DeclaredVersionTests {
    /// The conditional-put rules, which a storage of the five 1.0 methods fails on the API's
    /// default answer (storage.unsupported).
    static let conditionalRules = ["put_absent_creates_only", "put_absent_concurrent_one_wins", "put_matches_etag",
                                   "put_conditional_body_read_from_storage"]
    static func options(_ declared: APIVersion?) -> ObjectStorageConformance.Options {
        .init(includeLargeObjects: false, declaredVersion: declared)
    }

    @Test func storageWrittenFor10_passesAsDeclared_withTheNewerRulesAsWarnings() async throws {
        let report = await ObjectStorageConformance(makeStorage: { Storage10() },
                                                    options: Self.options(APIVersion(major: 1, minor: 0, patch: 0))).run()
        #expect(report.allPassed, "\(report)")
        try report.requireAllPassed()
        #expect(report.warnings.map(\.name) == Self.conditionalRules, "\(report)")
        for warning in report.warnings {
            guard case .warning(let reason) = warning.outcome else { continue }
            #expect(reason.hasPrefix("available since 1.2: implement put(_:body:contentType:metadata:condition:) checking .absent and .matches(etag:)"), "\(reason)")
            #expect(reason.contains("then declare 1.2 in the plugin header"), "\(reason)")
            #expect(reason.contains("storage.unsupported"), "the rule's own finding is kept: \(reason)")
        }
        // Skipped: the large object (options), reads at once (the API's default), the layer rule (no layer).
        let count = ObjectStorageConformance.rules.count
        #expect("\(report)".hasPrefix("ObjectStorage conformance: \(count) rules, \(count - 8) passed, 0 failed, 4 skipped, 4 warned (newer than the declared PlugboardAPI)\n"), "\(report)")
        #expect("\(report)".contains("WARN put_absent_creates_only: available since 1.2"), "\(report)")
    }

    @Test func storageDeclaringANewerVersion_orNone_isHeldToEveryRule() async throws {
        for declared in [nil, APIVersion(major: 1, minor: 2, patch: 0), APIVersion.current] {
            let report = await ObjectStorageConformance(makeStorage: { Storage10() }, options: Self.options(declared)).run()
            #expect(report.failedRuleNames == Self.conditionalRules, "declared \(String(describing: declared)): \(report)")
            #expect(report.warnings.isEmpty)
        }
    }

    @Test func everyRule_carriesAVersionThisAPIHas_andTheNewerOnesSayWhatToImplement() {
        for rule in ObjectStorageConformance.rules {
            #expect(rule.since.major == APIVersion.current.major && rule.since <= APIVersion.current, "\(rule.name): \(rule.since)")
            #expect(rule.since.minor == 0 || rule.upgrade != nil, "\(rule.name) since \(rule.since) says nothing to implement")
        }
        let since = Dictionary(uniqueKeysWithValues: ObjectStorageConformance.rules.map { ($0.name, $0.since.minor) })
        #expect(since["put_get_roundtrip"] == 0)
        #expect(since["put_absent_creates_only"] == 2)
        #expect(since["range_get_reads_the_bytes_asked"] == 2)
        #expect(since["get_without_waiting_matches_get"] == 4)
        #expect(since["layer_keeps_reads_streamed"] == 6)
    }
}

/// A storage as the guide had it at PlugboardAPI 1.0: the five whole-object methods.
struct Storage10: ObjectStorage {
    let memory = InMemoryObjectStorage()

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await memory.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func get(_ key: String) async throws -> StoredObject { try await memory.get(key) }

    func head(_ key: String) async throws -> ObjectInfo { try await memory.head(key) }

    func delete(_ key: String) async throws { try await memory.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await memory.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
