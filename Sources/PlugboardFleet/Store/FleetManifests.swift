import PlugboardAPI
import PlugboardHost

/// The manifests under `manifests/`, content-addressed, and `stable`.
public enum FleetManifests {
    /// Checks `bytes` parse as a manifest (Manifest.parse), stores them under their digest
    /// and returns it.
    ///
    /// - Throws: the manifest's own errors (`manifest.*`), `fleet.store_failed`.
    public static func store(_ bytes: [UInt8], source: String, in store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> String {
        _ = try Manifest.parse(bytes: bytes, path: source)
        let digest = try Digest.sha256Hex(bytes)
        try await store.put(keys.manifest(digest), bytes, lease: nil)
        return digest
    }

    /// The bytes of the manifest `digest`, checked against it.
    ///
    /// - Throws: `fleet.manifest_missing` when nothing is stored under the digest or the
    ///   bytes hash to another one; `fleet.store_failed`.
    public static func fetch(_ digest: String, from store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> [UInt8] {
        guard let bytes = try await store.get(keys.manifest(digest)) else {
            throw PlugboardError(.fleetManifestMissing, "manifest \(digest.prefix(12)) is not in the fleet's store",
                detail: "Nothing is stored under \(keys.manifest(digest)).",
                hint: "Store it again with plugboard fleet set or plugboard fleet rollout.")
        }
        let found = try Digest.sha256Hex(bytes)
        guard found == digest else {
            throw PlugboardError(.fleetManifestMissing, "manifest \(digest.prefix(12)) in the fleet's store has other bytes",
                detail: "The bytes under \(keys.manifest(digest)) hash to \(found).",
                hint: "Store it again with plugboard fleet set or plugboard fleet rollout; only plugboard should write under manifests/.")
        }
        return bytes
    }

    /// The stable record, or nil before the first `fleet set`.
    public static func stable(in store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> StableRecord? {
        guard let bytes = try await store.get(keys.stable) else { return nil }
        return try StableRecord(bytes: bytes)
    }

    /// `fleet set`: stores the manifest and makes it stable, unless a rollout holds the
    /// lock, or hosts sit on targets no live rollout owns (they would never take it).
    ///
    /// - Throws: `fleet.rollout_in_progress` naming the rollout; `fleet.rollout_orphaned`
    ///   naming the hosts and their rollout; the manifest's errors; `fleet.store_failed`.
    public static func setStable(_ bytes: [UInt8], source: String, by: String, in store: any FleetStore,
                                 keys: FleetKeys) async throws(PlugboardError) -> StableRecord {
        try await refuseOrphanedTargets("fleet set", in: store, keys: keys)
        let digest = try await Self.store(bytes, source: source, in: store, keys: keys)
        let record = StableRecord(digest: digest, setAt: Timestamp.now().iso8601, by: by)
        guard try await store.transaction(when: [.absent(keys.rolloutLock)], then: [.put(keys.stable, record.json.bytes, lease: nil)]) else {
            guard let lock = try await store.get(keys.rolloutLock) else {
                // The rollout ended between the two reads.
                return try await setStable(bytes, source: source, by: by, in: store, keys: keys)
            }
            throw try RolloutLock(bytes: lock).refusal("fleet set")
        }
        return record
    }

    /// Refuses `what` while a target is left that no live rollout owns: its host runs the
    /// target whatever stable says, and only `fleet rollout --abort` sends it back. With
    /// the lock held, a live rollout owns the targets (and the caller's own transaction
    /// refuses, naming it).
    ///
    /// - Throws: `fleet.rollout_orphaned`; `fleet.store_failed`.
    static func refuseOrphanedTargets(_ what: String, in store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) {
        guard try await store.get(keys.rolloutLock) == nil else { return }
        let targets = try await store.list(prefix: keys.targets)
        guard !targets.isEmpty else { return }
        let hosts = targets.map { keys.hostID(fromKey: $0.key) }
        var rollouts: [String] = []
        for entry in targets {
            let rollout = (try? TargetRecord(bytes: entry.value, what: "targets/\(keys.hostID(fromKey: entry.key))").rollout) ?? "(unreadable)"
            if !rollouts.contains(rollout) { rollouts.append(rollout) }
        }
        let named = hosts.prefix(10).map { "\"\($0)\"" }.joined(separator: ", ") + (hosts.count > 10 ? " and \(hosts.count - 10) more" : "")
        throw PlugboardError(.fleetRolloutOrphaned,
            "\(what) refused: \(hosts.count) host(s) are on the targets of rollout \(rollouts.map { "\"\($0)\"" }.joined(separator: ", ")), which no controller runs",
            detail: "Host(s) \(named) keep running their target (\(keys.targets)ID) whatever stable says; the rollout's controller is gone and its lock lapsed.",
            hint: "End that rollout with plugboard fleet rollout --abort (it deletes its targets, so its hosts go back to stable), then \(what) again.")
    }

    /// Every live host's status, by id; records that do not parse are left out.
    public static func hosts(in store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> [String: HostStatus] {
        var out: [String: HostStatus] = [:]
        for entry in try await store.list(prefix: keys.hosts) {
            let id = keys.hostID(fromKey: entry.key)
            if let status = try? HostStatus(bytes: entry.value, what: "hosts/\(id)") { out[id] = status }
        }
        return out
    }
}
