import PlugboardAPI

// The etcd client's errors (docs/ERRORS.md, "etcd") and the fleet URL's.
extension PlugboardError.Code {
    /// No endpoint of the cluster answered (or each answered that it cannot serve now),
    /// after the retries.
    public static let etcdUnreachable: Self = "etcd.unreachable"
    /// The gateway refused the request: its gRPC code and message.
    public static let etcdRequestFailed: Self = "etcd.request_failed"
    /// The gateway's answer is not the JSON it should be.
    public static let etcdMalformedAnswer: Self = "etcd.malformed_answer"
    /// A read asked for a revision that compaction removed.
    public static let etcdCompacted: Self = "etcd.compacted"
    /// The lease expired or was revoked (or never existed).
    public static let etcdLeaseExpired: Self = "etcd.lease_expired"
    /// A transaction's exchange failed after it was sent (the connection broke, it timed
    /// out, the leader changed under it): it may or may not have applied.
    public static let etcdOutcomeUnknown: Self = "etcd.outcome_unknown"
    /// The calling task was cancelled while a request ran.
    public static let etcdCancelled: Self = "etcd.cancelled"
    /// An `etcd://` fleet URL that cannot be read.
    public static let fleetURLInvalid: Self = "fleet.url_invalid"
}

extension PlugboardError {
    /// The hint of every failure to reach the cluster.
    static let unreachableHint = "Check that the etcd members run and that the endpoints (--fleet) name their client URLs; a fleet host keeps serving its last applied manifest meanwhile."

    static func etcdUnreachable(_ path: String, tried failures: [(EtcdEndpoint, String)]) -> PlugboardError {
        let names = Array(Set(failures.map(\.0.description))).sorted()
        let last = failures.last.map { "\($0.0): \($0.1)" } ?? "no endpoint configured"
        return PlugboardError(.etcdUnreachable, "could not reach etcd for \(path): every endpoint failed",
            detail: "Tried \(names.joined(separator: ", ")) (\(failures.count) attempts); the last failure: \(last).",
            hint: unreachableHint)
    }

    static func etcdRequestFailed(_ path: String, _ endpoint: EtcdEndpoint, _ answer: GatewayError) -> PlugboardError {
        PlugboardError(.etcdRequestFailed, "etcd refused \(path): \(answer.message)",
            detail: "The member at \(endpoint) answered HTTP \(answer.status) with gRPC code \(answer.code) (\(answer.codeName)).",
            hint: "See the message: a request the cluster refuses the same way each time needs another request, not a retry.")
    }

    static func etcdMalformed(_ path: String, _ endpoint: EtcdEndpoint, expected: String, found: String) -> PlugboardError {
        PlugboardError(.etcdMalformedAnswer, "malformed answer from etcd to \(path)",
            detail: "The member at \(endpoint) was expected to answer \(expected), found \(found).",
            hint: "Check that the endpoint is an etcd 3.4 or later client URL, not another server.")
    }

    static func etcdCancelled(_ path: String) -> PlugboardError {
        PlugboardError(.etcdCancelled, "etcd request \(path) cancelled",
            detail: "The task that sent it was cancelled before the answer came.",
            hint: "Nothing to do: cancellation is how a caller stops waiting.")
    }

    static func etcdOutcomeUnknown(_ path: String, _ endpoint: EtcdEndpoint, _ why: String) -> PlugboardError {
        PlugboardError(.etcdOutcomeUnknown, "etcd transaction's outcome is unknown",
            detail: "The exchange with \(endpoint) failed after \(path) was sent (\(why)); the cluster may or may not have applied it.",
            hint: "Read the keys the transaction compares to learn whether it applied, then decide whether to send it again.")
    }
}
