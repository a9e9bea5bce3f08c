/// A rule's finding: what the rule expected and what the storage did instead.
struct ConformanceCheckFailure: Error {
    let reason: String

    init(_ reason: String) { self.reason = reason }
}
