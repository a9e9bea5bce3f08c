import PlugboardAPI

/// The one conformance suite every ``ObjectStorage`` backend runs: each rule of the
/// protocol's "Implementation requirements" as a named check, and a report saying which
/// rules a backend breaks and how.
///
/// Run it from a test of your backend (Swift Testing shown; XCTest works the same):
///
/// ```swift
/// import PlugboardAPI
/// import PlugboardTesting
/// import Testing
///
/// @Test func myStorageConforms() async throws {
///     let conformance = ObjectStorageConformance(makeStorage: { try MyStorage(bucket: "test") })
///     try await conformance.run().requireAllPassed()
/// }
/// ```
///
/// `requireAllPassed()` throws a ``Failure`` listing every broken rule by name, with what
/// was expected and what was found:
///
/// ```text
/// 1 of 54 ObjectStorage conformance rules failed:
///   FAIL delete_is_idempotent: delete of missing key "<prefix>/never-written": expected success, found storage.not_found (no object under key "...")
///   (<prefix> stands for the rule's own key prefix: Options.keyPrefix, the run's id and the rule's name, joined by "-".)
/// ```
///
/// Each rule gets a fresh storage from `makeStorage` and its own keys under a prefix unique
/// to the run and the rule (`plugboard-conformance-<run>-<rule>/...`), and deletes what it
/// wrote when it ends; so rules do not interfere and the suite can run against a shared
/// real server. One rule, `key_dotdot_ok`, must use the exact keys `..` and `.`; it keeps
/// any object already stored under them and puts it back when it ends. See ``rules`` for
/// each rule's summary.
public struct ObjectStorageConformance: Sendable {
    /// Makes the storage a rule runs against; called once per rule.
    public let makeStorage: @Sendable () async throws -> any ObjectStorage
    /// How the suite runs.
    public let options: Options
    /// What reaches the storage below, when the storage is a layer the suite observes.
    let below: LayerBelow?

    /// Prepares the suite for a backend.
    ///
    /// - Parameters:
    ///   - makeStorage: Returns the storage to check; called once per rule, so it may
    ///     return a fresh instance each time or the same shared one.
    ///   - options: Which rules to run and with what sizes and limits; see ``Options``.
    public init(makeStorage: @escaping @Sendable () async throws -> any ObjectStorage,
                options: Options = Options()) {
        self.init(makeStorage: makeStorage, options: options, below: nil)
    }

    /// Prepares the suite for a layer: each rule gets `makeLayer` over a storage from
    /// `makeBelow`, and the suite watches what reaches that storage, so that the rule
    /// `layer_keeps_reads_streamed` can tell a layer that forwards ranged and at-once reads
    /// from one that turns them into whole reads.
    ///
    /// ```swift
    /// let conformance = ObjectStorageConformance(layer: { below in AuditLayer(below: below) },
    ///                                            over: { InMemoryObjectStorage() })
    /// try await conformance.run().requireAllPassed()
    /// ```
    public init(layer makeLayer: @escaping @Sendable (_ below: any ObjectStorage) async throws -> any ObjectStorage,
                over makeBelow: @escaping @Sendable () async throws -> any ObjectStorage,
                options: Options = Options()) {
        let below = LayerBelow()
        self.init(makeStorage: { try await makeLayer(below.observe(try await makeBelow())) }, options: options, below: below)
    }

    init(makeStorage: @escaping @Sendable () async throws -> any ObjectStorage, options: Options, below: LayerBelow?) {
        self.makeStorage = makeStorage
        self.options = options
        self.below = below
    }

    /// Every rule, in the order the suite runs them.
    public static var rules: [Rule] { ConformanceChecks.all.map(\.rule) }

    /// Runs the selected rules one after another and reports each.
    ///
    /// Never throws: a failing storage, a throwing `makeStorage` or a rule that exceeds
    /// ``Options/ruleTimeout`` is a failed rule in the report.
    public func run() async -> Report {
        if let problem = options.problem {
            return Report(results: [RuleResult(
                name: "options", summary: "The suite's options are usable.",
                outcome: .failed(reason: problem), duration: .zero)])
        }
        let runID = Self.makeRunID()
        var results: [RuleResult] = []
        let known = Set(ConformanceChecks.all.map(\.rule.name))
        for (option, names) in [("only", options.only ?? []), ("skip", Set(options.skip.keys))] {
            for name in names.sorted() where !known.contains(name) {
                results.append(RuleResult(
                    name: name, summary: "not a rule of this suite",
                    outcome: .failed(reason: "no rule is named \(ConformanceText.quote(name)); Options.\(option) names rules from ObjectStorageConformance.rules"),
                    duration: .zero))
            }
        }
        for definition in ConformanceChecks.all {
            let rule = definition.rule
            if let only = options.only, !only.contains(rule.name) { continue }
            if let reason = options.skip[rule.name] {
                results.append(RuleResult(name: rule.name, summary: rule.summary,
                                          outcome: .skipped(reason: reason), duration: .zero))
                continue
            }
            if rule.isOptional, !options.includeLargeObjects {
                results.append(RuleResult(
                    name: rule.name, summary: rule.summary,
                    outcome: .skipped(reason: "Options.includeLargeObjects is false"), duration: .zero))
                continue
            }
            results.append(await run(definition, runID: runID))
        }
        return Report(results: results)
    }

    private func run(_ definition: ConformanceChecks.Definition, runID: String) async -> RuleResult {
        let rule = definition.rule
        let clock = ContinuousClock()
        let start = clock.now
        let makeStorage = self.makeStorage
        let options = self.options
        let below = self.below
        let base = "\(options.keyPrefix)-\(runID)-\(rule.name)"
        let outcome = await ConformanceDeadline.run(timeout: options.ruleTimeout) { () async -> Outcome in
            let storage: any ObjectStorage
            do {
                storage = try await makeStorage()
            } catch {
                return .failed(reason: "makeStorage threw \(ConformanceText.describe(error))")
            }
            let context = ConformanceContext(storage: storage, options: options, base: base, below: below)
            let outcome: Outcome
            do {
                try await definition.check(context)
                outcome = .passed
            } catch let failure as ConformanceCheckFailure {
                outcome = .failed(reason: failure.reason)
            } catch let skip as ConformanceSkip {
                outcome = .skipped(reason: skip.reason)
            } catch {
                outcome = .failed(reason: "unexpected error \(ConformanceText.describe(error))")
            }
            await context.cleanUp()
            return outcome
        }
        let duration = clock.now - start
        let unfinished: Outcome = Task.isCancelled
            ? .failed(reason: "the suite was cancelled before the rule finished")
            : .failed(reason: "did not finish within \(options.ruleTimeout) (Options.ruleTimeout); the storage may hang")
        var result = outcome ?? unfinished
        if case .failed(let reason) = result, let declared = options.declaredVersion, !rule.applies(to: declared) {
            result = .warning(reason: rule.advice(failure: reason))
        }
        return RuleResult(name: rule.name, summary: rule.summary, outcome: result, duration: duration)
    }

    private static func makeRunID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
