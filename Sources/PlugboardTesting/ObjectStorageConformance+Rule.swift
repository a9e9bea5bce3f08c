import PlugboardAPI

extension ObjectStorageConformance {
    /// One rule of the suite: a stable name (`delete_is_idempotent`), what it checks, and the
    /// PlugboardAPI version that introduced what it checks.
    public struct Rule: Sendable, Hashable, Identifiable {
        /// The rule's stable name, lower-case with underscores; reports and
        /// ``Options/only`` use it.
        public let name: String
        /// What the rule checks, as a sentence.
        public let summary: String
        /// Whether the rule is skipped when ``Options/includeLargeObjects`` is `false`.
        public let isOptional: Bool
        /// The PlugboardAPI version whose requirement the rule checks (patch 0). A storage
        /// whose plugin header declares an older minor version is not held to it: the
        /// rule's failure is a warning (``Outcome/warning(reason:)``), see
        /// ``Options/declaredVersion``.
        public let since: APIVersion
        /// What a storage implements to meet the rule once it declares ``since``, for the
        /// warning: "implement put(_:body:contentType:metadata:condition:) ...".
        public let upgrade: String?

        /// The name.
        public var id: String { name }

        init(_ name: String, _ summary: String, isOptional: Bool = false, sinceMinor: UInt32 = 0, upgrade: String? = nil) {
            self.name = name
            self.summary = summary
            self.isOptional = isOptional
            self.since = APIVersion(major: 1, minor: sinceMinor, patch: 0)
            self.upgrade = upgrade
        }

        /// Whether a storage built against `declared` is held to the rule.
        public func applies(to declared: APIVersion) -> Bool {
            declared.major != since.major || declared.minor >= since.minor
        }

        /// The warning a rule that `declared` is not held to gives when the storage does not
        /// meet it: when it became available and what to do.
        func advice(failure: String) -> String {
            let version = "\(since.major).\(since.minor)"
            let todo = upgrade.map { "\($0), then declare \(version)" } ?? "meet it, then declare \(version)"
            return "available since \(version): \(todo) in the plugin header (not required of the version it declares; found: \(failure))"
        }
    }
}
