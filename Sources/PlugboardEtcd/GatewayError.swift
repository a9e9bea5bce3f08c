/// An error etcd's JSON gateway answered with: `{"error", "message", "code"}` for a unary
/// call, `{"error": {"grpc_code", "message", ...}}` inside a stream.
struct GatewayError: Sendable, Equatable {
    /// The HTTP status (0 inside a stream, whose status was 200).
    var status: Int
    /// The gRPC status code.
    var code: Int
    var message: String

    /// gRPC's name for ``code``.
    var codeName: String {
        let names = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                     "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                     "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]
        return names.indices.contains(code) ? names[code] : "code \(code)"
    }

    /// Whether the cluster refused for now, not for good: no leader (an election runs),
    /// the leader changed under the request, too many requests, or a member that cannot
    /// serve (UNAVAILABLE). Another member, or the same one a moment later, may answer.
    var isTransient: Bool {
        code == 14 || Self.transientMessages.contains { message.contains($0) }
    }

    /// Whether the cluster certainly did not apply the request: it refused it before
    /// proposing it to Raft. Only these may be sent again when the request is not
    /// idempotent (a transaction).
    var certainlyNotApplied: Bool {
        ["no leader", "too many requests", "not capable"].contains { message.contains($0) }
    }

    /// A compacted revision was asked for.
    var isCompacted: Bool { code == 11 && message.contains("compacted") }

    /// The lease is not known (expired, revoked, never granted).
    var isLeaseNotFound: Bool { code == 5 && message.contains("lease not found") }

    private static let transientMessages = [
        "no leader", "leader changed", "too many requests", "request timed out", "timed out waiting for read index",
        "not capable", "server stopped", "raft proposal dropped",
    ]
}
