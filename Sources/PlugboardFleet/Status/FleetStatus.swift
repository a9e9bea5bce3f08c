import PlugboardAPI
import PlugboardHost

/// `fleet status`: the stable manifest, every live host with what it runs and whether it
/// lags, refused or is gone, and the current (or last) rollout.
public struct FleetStatus: Sendable {
    /// One host as the status shows it.
    public struct Host: Sendable {
        public var status: HostStatus
        /// What it should run: its target, else stable.
        public var desired: String?
        /// It runs another manifest than its desired one.
        public var lagging: Bool { desired.map { $0 != status.manifestDigest } ?? false }
        /// Its last reload, of its desired manifest, was refused.
        public var refused: Bool { status.lastReload.map { $0.refused && $0.digest == desired } ?? false }
    }

    public var stable: StableRecord?
    /// Live hosts, sorted by id.
    public var hosts: [Host]
    /// Hosts with a target but no live key: gone mid-rollout.
    public var gone: [String]
    public var rollout: RolloutRecord?

    public static func read(from store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> FleetStatus {
        let stable = try await FleetManifests.stable(in: store, keys: keys)
        let live = try await FleetManifests.hosts(in: store, keys: keys)
        var targets: [String: String] = [:]
        for entry in try await store.list(prefix: keys.targets) {
            let id = keys.hostID(fromKey: entry.key)
            targets[id] = try TargetRecord(bytes: entry.value, what: "targets/\(id)").digest
        }
        let rollout = try await store.get(keys.rolloutCurrent).map { b throws(PlugboardError) in try RolloutRecord(bytes: b, what: "rollout/current") }
        let hosts = live.values.sorted { $0.id < $1.id }.map { Host(status: $0, desired: targets[$0.id] ?? stable?.digest) }
        return FleetStatus(stable: stable, hosts: hosts, gone: targets.keys.filter { live[$0] == nil }.sorted(), rollout: rollout)
    }

    public var json: JSONOutput {
        .object([
            ("stable", stable?.json ?? .null),
            ("hosts", .array(hosts.map { host in
                guard case .object(var members) = host.status.json else { return host.status.json }
                members += [("desiredDigest", .string(host.desired)), ("lagging", .bool(host.lagging)), ("refused", .bool(host.refused))]
                return .object(members)
            })),
            ("gone", .array(gone.map { .string($0) })),
            ("rollout", rollout?.json ?? .null),
        ])
    }
}
