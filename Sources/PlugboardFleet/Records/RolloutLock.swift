import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `PREFIX/rollout/lock`: which rollout runs, under its controller's lease, so that a
/// second one (and `fleet set`) can name it, and a dead controller frees it.
public struct RolloutLock: Sendable, Equatable {
    public var id: String
    public var candidate: String
    public var startedAt: String
    public var by: String

    public init(id: String, candidate: String, startedAt: String, by: String) {
        self.id = id
        self.candidate = candidate
        self.startedAt = startedAt
        self.by = by
    }

    public var json: JSONOutput {
        .object([("id", .string(id)), ("candidate", .string(candidate)), ("startedAt", .string(startedAt)), ("by", .string(by))])
    }

    public init(bytes: [UInt8]) throws(PlugboardError) {
        let r = try FleetJSON.parse(bytes, what: "rollout/lock")
        self.init(id: try r.string("id"), candidate: try r.string("candidate"), startedAt: try r.string("startedAt"), by: try r.string("by"))
    }

    /// `fleet.rollout_in_progress`, naming this rollout, for `what` (`fleet set`, a second
    /// rollout) that must wait for it.
    public func refusal(_ what: String) -> PlugboardError {
        PlugboardError(.fleetRolloutInProgress, "\(what) refused: rollout \"\(id)\" is running",
            detail: "Rollout \"\(id)\" of manifest \(candidate.prefix(12)) started at \(startedAt) by \(by) and holds the rollout lock.",
            hint: "Wait for it to end (plugboard fleet status), or stop it with plugboard fleet rollout --abort.")
    }
}
