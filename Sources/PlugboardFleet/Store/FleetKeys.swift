/// The fleet's key layout under its prefix, written once (docs/FLEET.md, "Keys").
public struct FleetKeys: Sendable, Equatable {
    /// The prefix, without a trailing slash (`/plugboard/staging`).
    public let prefix: String

    public init(prefix: String) {
        var p = prefix
        while p.hasSuffix("/") { p.removeLast() }
        self.prefix = p
    }

    /// A manifest's bytes, under the hex SHA-256 of those bytes.
    public func manifest(_ digest: String) -> String { "\(prefix)/manifests/\(digest)" }
    /// ``StableRecord``: what every host runs outside a rollout.
    public var stable: String { "\(prefix)/stable" }
    /// Every host's ``TargetRecord``.
    public var targets: String { "\(prefix)/targets/" }
    /// One host's ``TargetRecord``: its override while a rollout has reached its wave.
    public func target(_ hostID: String) -> String { "\(prefix)/targets/\(hostID)" }
    /// Every live host's ``HostStatus``.
    public var hosts: String { "\(prefix)/hosts/" }
    /// One host's ``HostStatus``, under the host's lease.
    public func host(_ hostID: String) -> String { "\(prefix)/hosts/\(hostID)" }
    /// The rollout lock, under the rollout controller's lease.
    public var rolloutLock: String { "\(prefix)/rollout/lock" }
    /// The running (or last) rollout's ``RolloutRecord``.
    public var rolloutCurrent: String { "\(prefix)/rollout/current" }
    /// A rollout id, written by `fleet rollout --abort` for the controller to read.
    public var rolloutAbort: String { "\(prefix)/rollout/abort" }
    /// Every finished rollout's record.
    public var rolloutHistory: String { "\(prefix)/rollout/history/" }
    /// One finished rollout's record.
    public func rolloutHistory(_ id: String) -> String { "\(prefix)/rollout/history/\(id)" }

    /// The host id at the end of a `hosts/` or `targets/` key.
    public func hostID(fromKey key: String) -> String {
        String(key[key.index(after: key.lastIndex(of: "/") ?? key.startIndex)...])
    }
}
