extension ObjectStorageConformance {
    /// The outcome of one run: every rule by name, passed, failed (with the reason) or
    /// skipped.
    public struct Report: Sendable, CustomStringConvertible {
        /// Every rule's result, in the order they ran.
        public let results: [RuleResult]

        /// Creates a report from results.
        public init(results: [RuleResult]) {
            self.results = results
        }

        /// The results of the rules that failed.
        public var failures: [RuleResult] { results.filter(\.isFailure) }

        /// The results of the rules the storage does not meet but is not held to, since a
        /// newer PlugboardAPI than its header declares introduced them: each says what to
        /// implement and which version to declare.
        public var warnings: [RuleResult] {
            results.filter { if case .warning = $0.outcome { true } else { false } }
        }

        /// The names of the rules that failed.
        public var failedRuleNames: [String] { failures.map(\.name) }

        /// The names of the rules that passed.
        public var passedRuleNames: [String] {
            results.filter { $0.outcome == .passed }.map(\.name)
        }

        /// Whether no rule failed (skipped rules and warnings do not count as failures).
        public var allPassed: Bool { failures.isEmpty }

        /// The result of the rule named `name`, or `nil` when it did not run.
        public func result(named name: String) -> RuleResult? {
            results.first { $0.name == name }
        }

        /// Throws unless every rule that ran passed.
        ///
        /// - Throws: ``Failure``, whose description lists each failed rule by name with
        ///   what was expected and what was found.
        public func requireAllPassed() throws(Failure) {
            if !allPassed { throw Failure(report: self) }
        }

        /// A summary line, then one line per failed or skipped rule.
        public var description: String {
            let passed = results.count { $0.outcome == .passed }
            let skipped = results.count { if case .skipped = $0.outcome { true } else { false } }
            let warned = warnings.count
            var lines = ["ObjectStorage conformance: \(results.count) rules, \(passed) passed, \(failures.count) failed, \(skipped) skipped"
                + (warned > 0 ? ", \(warned) warned (newer than the declared PlugboardAPI)" : "")]
            for result in results where result.outcome != .passed {
                lines.append("  \(result)")
            }
            if let note = ObjectStorageConformance.prefixNote(for: failures) { lines.append(note) }
            return lines.joined(separator: "\n")
        }
    }

    /// The result of one rule.
    public struct RuleResult: Sendable, Hashable, CustomStringConvertible {
        /// The rule's name, such as `delete_is_idempotent`.
        public let name: String
        /// What the rule checks.
        public let summary: String
        /// Passed, failed with a reason, or skipped with a reason.
        public let outcome: Outcome
        /// How long the rule took, storage creation and cleanup included.
        public let duration: Duration

        /// Whether the rule failed.
        public var isFailure: Bool {
            if case .failed = outcome { return true }
            return false
        }

        /// `PASS name`, `FAIL name: reason`, `SKIP name: reason` or `WARN name: reason`.
        public var description: String {
            switch outcome {
            case .passed: "PASS \(name)"
            case .failed(let reason): "FAIL \(name): \(reason)"
            case .skipped(let reason): "SKIP \(name): \(reason)"
            case .warning(let reason): "WARN \(name): \(reason)"
            }
        }
    }

    /// How a rule ended.
    public enum Outcome: Sendable, Hashable {
        /// The storage behaved as the rule requires.
        case passed
        /// The storage broke the rule; the reason says what was expected and what was
        /// found.
        case failed(reason: String)
        /// The rule did not run; the reason says why.
        case skipped(reason: String)
        /// The storage does not meet a rule that a newer PlugboardAPI than its header
        /// declares introduced (``Options/declaredVersion``); the reason says since which
        /// version, what to implement, and what the rule found. Not a failure.
        case warning(reason: String)
    }

    /// Explains `<prefix>` when a failure reason uses it.
    static func prefixNote(for failures: [RuleResult]) -> String? {
        let used = failures.contains { result in
            if case .failed(let reason) = result.outcome { return reason.contains("\"<prefix>") }
            return false
        }
        return used ? "  (<prefix> stands for the rule's own key prefix: Options.keyPrefix, the run's id and the rule's name, joined by \"-\".)" : nil
    }
}
