/// Every rule of the conformance suite with the check that decides it, grouped by aspect
/// in the `ConformanceChecks+*.swift` files.
enum ConformanceChecks {
    /// A rule and its check.
    struct Definition: Sendable {
        let rule: ObjectStorageConformance.Rule
        let check: @Sendable (ConformanceContext) async throws -> Void

        init(_ name: String, sinceMinor: UInt32 = 0, upgrade: String? = nil, _ summary: String, isOptional: Bool = false,
             _ check: @escaping @Sendable (ConformanceContext) async throws -> Void) {
            self.rule = ObjectStorageConformance.Rule(name, summary, isOptional: isOptional, sinceMinor: sinceMinor, upgrade: upgrade)
            self.check = check
        }
    }

    /// All rules in run order: objects, keys, metadata, listing, streaming (bodies, ranges,
    /// conditions), reads answered at once, layers, then scale.
    static let all: [Definition] = objectRules + keyRules + metadataRules + listingRules + streamingRules
        + readsWithoutWaitingRules + layerRules + scaleRules
}
