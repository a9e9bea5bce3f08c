import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `fleet status`: the stable manifest, every live host with what it runs and whether it
/// lags, refused or is gone, and the current (or last) rollout, whether its controller
/// still runs it.
///
/// Whatever the records under the prefix hold, every one that reads is shown: a record
/// that is not what docs/FLEET.md describes (garbage, `{}`, a value too large) is named in
/// ``badRecords`` and left out, never the end of the report.
public struct FleetStatus: Sendable {
    /// One host as the status shows it.
    public struct Host: Sendable {
        public var status: HostStatus
        /// What it should run: its target while the live rollout owns it, else stable.
        public var desired: String?
        /// Its target, when no live rollout owns it (the controller that wrote it is gone
        /// and its lock lapsed): the host runs it, and nothing will move it on.
        public var orphanedTarget: TargetRecord?
        /// It runs another manifest than its desired one, or sits on an orphaned target.
        public var lagging: Bool { orphanedTarget != nil || desired.map { $0 != status.manifestDigest } ?? false }
        /// Its last reload, of its desired manifest, was refused.
        public var refused: Bool { status.lastReload.map { $0.refused && $0.digest == desired } ?? false }
    }

    /// A record that does not read: its key under the prefix (`stable`, `hosts/web-1`)
    /// and why (`fleet.record_invalid`).
    public struct BadRecord: Sendable {
        public var key: String
        public var error: PlugboardError
    }

    public var stable: StableRecord?
    /// Live hosts, sorted by id.
    public var hosts: [Host]
    /// Hosts with a target but no live key: gone mid-rollout.
    public var gone: [String]
    public var rollout: RolloutRecord?
    /// The rollout lock, while a controller holds it.
    public var lock: RolloutLock?
    /// Records that did not read, in key order.
    public var badRecords: [BadRecord]

    /// The current rollout has not ended, and no controller holds its lock: the one that
    /// ran it is gone. Only `fleet rollout --abort` ends it.
    public var rolloutOrphaned: Bool { rollout.map { !$0.finished && lock?.id != $0.id } ?? false }

    /// Whether a live rollout owns `target`: the one whose controller holds the lock.
    public static func owned(_ target: TargetRecord, by lock: RolloutLock?) -> Bool { lock?.id == target.rollout }

    /// Reads every record the status shows.
    ///
    /// - Throws: the store's errors only (`etcd.*`, `fleet.store_failed`).
    public static func read(from store: any FleetStore, keys: FleetKeys) async throws(PlugboardError) -> FleetStatus {
        var bad: [BadRecord] = []
        func decode<T>(_ key: String, _ body: () throws(PlugboardError) -> T) -> T? {
            do throws(PlugboardError) {
                return try body()
            } catch {
                bad.append(BadRecord(key: key, error: error))
                return nil
            }
        }
        let stable = try await store.get(keys.stable).flatMap { b in decode("stable") { () throws(PlugboardError) in try StableRecord(bytes: b) } }
        let lock = try await store.get(keys.rolloutLock).flatMap { b in decode("rollout/lock") { () throws(PlugboardError) in try RolloutLock(bytes: b) } }
        let rollout = try await store.get(keys.rolloutCurrent).flatMap { b in
            decode("rollout/current") { () throws(PlugboardError) in try RolloutRecord(bytes: b, what: "rollout/current") }
        }
        var live: [String: HostStatus] = [:]
        for entry in try await store.list(prefix: keys.hosts) {
            let id = keys.hostID(fromKey: entry.key)
            live[id] = decode("hosts/\(id)") { () throws(PlugboardError) in try HostStatus(bytes: entry.value, what: "hosts/\(id)") }
        }
        var targets: [String: TargetRecord] = [:]
        var untargeted: Set<String> = []
        for entry in try await store.list(prefix: keys.targets) {
            let id = keys.hostID(fromKey: entry.key)
            if let target = decode("targets/\(id)", { () throws(PlugboardError) in try TargetRecord(bytes: entry.value, what: "targets/\(id)") }) {
                targets[id] = target
            } else {
                untargeted.insert(id)
            }
        }
        let hosts = live.values.sorted { $0.id < $1.id }.map { status -> Host in
            guard let target = targets[status.id] else { return Host(status: status, desired: untargeted.contains(status.id) ? nil : stable?.digest) }
            return owned(target, by: lock) ? Host(status: status, desired: target.digest)
                : Host(status: status, desired: stable?.digest, orphanedTarget: target)
        }
        return FleetStatus(stable: stable, hosts: hosts, gone: targets.keys.filter { live[$0] == nil }.sorted(), rollout: rollout,
                           lock: lock, badRecords: bad.sorted { $0.key < $1.key })
    }

    public var json: JSONOutput {
        .object([
            ("stable", stable?.json ?? .null),
            ("hosts", .array(hosts.map { host in
                guard case .object(var members) = host.status.json else { return host.status.json }
                members += [("desiredDigest", .string(host.desired)), ("lagging", .bool(host.lagging)), ("refused", .bool(host.refused)),
                            ("orphanedRollout", .string(host.orphanedTarget?.rollout))]
                return .object(members)
            })),
            ("gone", .array(gone.map { .string($0) })),
            ("rollout", rollout?.json ?? .null),
            ("rolloutOrphaned", .bool(rolloutOrphaned)),
            ("badRecords", .array(badRecords.map {
                .object([("key", .string($0.key)), ("error", .object([("code", .string($0.error.code.rawValue)), ("message", .string($0.error.message))]))])
            })),
        ])
    }
}
