/// A rule's finding: what the rule expected and what the storage did instead.
struct ConformanceCheckFailure: Error {
    let reason: String

    init(_ reason: String) { self.reason = reason }
}

/// Thrown by a check that has nothing to decide for this storage: the rule is reported as
/// skipped, with the reason, rather than passed.
struct ConformanceSkip: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
