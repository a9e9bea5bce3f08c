extension ObjectStorageConformance {
    /// One rule of the suite: a stable name (`delete_is_idempotent`) and what it checks.
    public struct Rule: Sendable, Hashable, Identifiable {
        /// The rule's stable name, lower-case with underscores; reports and
        /// ``Options/only`` use it.
        public let name: String
        /// What the rule checks, as a sentence.
        public let summary: String
        /// Whether the rule is skipped when ``Options/includeLargeObjects`` is `false`.
        public let isOptional: Bool

        /// The name.
        public var id: String { name }

        init(_ name: String, _ summary: String, isOptional: Bool = false) {
            self.name = name
            self.summary = summary
            self.isOptional = isOptional
        }
    }
}
