import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `PREFIX/stable`: the manifest every host runs outside a rollout.
public struct StableRecord: Sendable, Equatable {
    /// The manifest's digest (its bytes under `manifests/<digest>`).
    public var digest: String
    /// When it became stable (ISO 8601).
    public var setAt: String
    /// Who set it: `fleet set` or the rollout that promoted it.
    public var by: String

    public init(digest: String, setAt: String, by: String) {
        self.digest = digest
        self.setAt = setAt
        self.by = by
    }

    public var json: JSONOutput { .object([("digest", .string(digest)), ("setAt", .string(setAt)), ("by", .string(by))]) }

    public init(bytes: [UInt8]) throws(PlugboardError) {
        let r = try FleetJSON.parse(bytes, what: "stable")
        self.init(digest: try r.string("digest"), setAt: try r.string("setAt"), by: try r.string("by"))
    }
}
