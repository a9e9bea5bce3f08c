import PlugboardAPI

extension ObjectStorageConformance {
    /// How the conformance suite runs: which rules, with what sizes and limits.
    public struct Options: Sendable {
        /// Whether to run the rules marked optional (`large_object_64mib`), which move
        /// 64 MiB each way. Default `true`.
        public var includeLargeObjects: Bool
        /// The size of the large object in bytes, at most 4 GiB. Default 64 MiB.
        public var largeObjectByteCount: Int
        /// How many tasks write at once in `concurrent_writers`. Default 16.
        public var concurrentTasks: Int
        /// The longest one rule may take, cleanup included, before it fails. Default 300 s.
        public var ruleTimeout: Duration
        /// How far `lastModified` may be from this machine's clock. Default 900 s, S3's
        /// allowed clock skew; a backend on this machine could use far less.
        public var clockSkewTolerance: Duration
        /// The start of every key the suite writes (besides the few exact keys such as
        /// `..`). Default `plugboard-conformance`; each run and rule appends its own part.
        public var keyPrefix: String
        /// Runs only the rules with these names; `nil` (the default) runs them all.
        public var only: Set<String>?
        /// Rules not to run, by name, each with the reason the report gives: for a rule
        /// that a test server cannot pass although the backend does its part (moto
        /// checking a condition and storing in two steps). Reported as skipped, never as
        /// passed. Default none.
        public var skip: [String: String]
        /// The PlugboardAPI version the storage's plugin header declares: a rule that a
        /// newer version introduced (``Rule/since``) still runs, but its failure is a
        /// ``Outcome/warning(reason:)`` saying what to implement and which version to
        /// declare, not a failure, so that rebuilding an older plugin against a newer SDK
        /// keeps its tests green. `nil` (the default) holds the storage to every rule;
        /// ``LoadedPlugin/objectStorageConformance(options:)`` sets it from the loaded
        /// file's header.
        public var declaredVersion: APIVersion?

        /// Options with visible defaults; change what you need.
        public init(includeLargeObjects: Bool = true,
                    largeObjectByteCount: Int = 64 * 1024 * 1024,
                    concurrentTasks: Int = 16,
                    ruleTimeout: Duration = .seconds(300),
                    clockSkewTolerance: Duration = .seconds(900),
                    keyPrefix: String = "plugboard-conformance",
                    only: Set<String>? = nil,
                    skip: [String: String] = [:],
                    declaredVersion: APIVersion? = nil) {
            self.includeLargeObjects = includeLargeObjects
            self.largeObjectByteCount = largeObjectByteCount
            self.concurrentTasks = concurrentTasks
            self.ruleTimeout = ruleTimeout
            self.clockSkewTolerance = clockSkewTolerance
            self.keyPrefix = keyPrefix
            self.only = only
            self.skip = skip
            self.declaredVersion = declaredVersion
        }

        /// Why these options cannot run the suite, or `nil` when they can.
        var problem: String? {
            let prefixBytes = keyPrefix.utf8.count
            if prefixBytes == 0 || prefixBytes > 200 || keyPrefix.utf8.contains(0) || keyPrefix.contains("/") {
                return "Options.keyPrefix \(ConformanceText.quote(keyPrefix)) cannot be used: expected 1 to 200 bytes without \"/\" or NUL, found \(prefixBytes) bytes"
            }
            if !(1...1000).contains(concurrentTasks) {
                return "Options.concurrentTasks cannot be used: expected 1 to 1000, found \(concurrentTasks)"
            }
            if !(0...(4 << 30)).contains(largeObjectByteCount) {
                return "Options.largeObjectByteCount cannot be used: expected 0 to 4 GiB, found \(largeObjectByteCount)"
            }
            if ruleTimeout <= .zero {
                return "Options.ruleTimeout cannot be used: expected a positive duration, found \(ruleTimeout)"
            }
            if clockSkewTolerance < .zero {
                return "Options.clockSkewTolerance cannot be used: expected zero or more, found \(clockSkewTolerance)"
            }
            return nil
        }
    }
}
