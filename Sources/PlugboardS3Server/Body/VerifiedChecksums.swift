import PlugboardConcurrency

/// The `x-amz-checksum-*` values a body was checked against, once it has ended and they
/// matched: PutObject and UploadPart answer them, whether they came as a header or in an
/// `aws-chunked` trailer (a client that sent a trailer checks the answer's value).
public final class VerifiedChecksums: Sendable {
    private let values = LockedValueBox<[(name: String, value: String)]>([])

    public init() {}

    func record(_ checked: [(name: String, value: String)]) {
        values.withLock { $0 = checked }
    }

    /// The values checked, lower-case names first to last; empty before the body ends.
    public var all: [(name: String, value: String)] { values.withLock { $0 } }

    /// ``all`` as the answer's header fields.
    public var answerHeaders: [(String, String)] { all.map { ($0.name, $0.value) } }
}
