import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `PREFIX/targets/<hostID>`: one host's manifest while a rollout has reached its wave.
public struct TargetRecord: Sendable, Equatable {
    /// The candidate manifest's digest.
    public var digest: String
    /// The rollout that wrote it.
    public var rollout: String

    public init(digest: String, rollout: String) {
        self.digest = digest
        self.rollout = rollout
    }

    public var json: JSONOutput { .object([("digest", .string(digest)), ("rollout", .string(rollout))]) }

    public init(bytes: [UInt8], what: String) throws(PlugboardError) {
        let r = try FleetJSON.parse(bytes, what: what)
        self.init(digest: try r.string("digest"), rollout: try r.string("rollout"))
    }
}
