import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardJSON

/// Hosts that do what a fleet host's agent does, without a PluginHost: each reads its
/// desired digest after every change and reports it applied, unless the digest is one it
/// refuses. Enough to drive a real ``RolloutController`` over the in-memory store.
final class SimulatedFleet: Sendable {
    let store: InMemoryFleetStore
    let keys: FleetKeys
    let refusing: [String: Set<String>]
    private let tasks: [Task<Void, Never>]

    init(store: InMemoryFleetStore, keys: FleetKeys, hosts: [String], refusing: [String: Set<String>] = [:]) async throws {
        self.store = store
        self.keys = keys
        self.refusing = refusing
        var tasks: [Task<Void, Never>] = []
        for id in hosts {
            let lease = try await store.grantLease(ttlSeconds: 10)
            try await Self.report(store: store, keys: keys, id: id, lease: lease, running: nil, refusing: refusing[id] ?? [])
            let changes = store.changes(prefix: keys.prefix + "/")
            tasks.append(Task {
                var running: String? = try? await FleetManifests.stable(in: store, keys: keys)?.digest
                for await _ in changes {
                    running = (try? await Self.report(store: store, keys: keys, id: id, lease: lease, running: running,
                                                       refusing: refusing[id] ?? [])) ?? running
                }
            })
        }
        self.tasks = tasks
    }

    /// Applies the host's desired digest unless refused; writes its status; returns what runs.
    @discardableResult
    static func report(store: InMemoryFleetStore, keys: FleetKeys, id: String, lease: Int64, running: String?,
                       refusing: Set<String>) async throws -> String? {
        var desired = try await FleetManifests.stable(in: store, keys: keys)?.digest
        var rollout: String?
        if let bytes = try await store.get(keys.target(id)) {
            let target = try TargetRecord(bytes: bytes, what: "t")
            (desired, rollout) = (target.digest, target.rollout)
        }
        var now = running ?? desired ?? ""
        var last: HostStatus.LastReload?
        if let desired {
            if refusing.contains(desired) {
                last = .init(outcome: "refused", digest: desired, rollout: rollout, errorCode: "reload.preflight_failed",
                             errorMessage: "plugin \"Bad\" crashed in its preflight (signal 11)", at: "t")
            } else {
                now = desired
                last = .init(outcome: "applied", digest: desired, at: "t")
            }
        }
        let status = HostStatus(id: id, address: "http://127.0.0.1:1", version: "0.1.0", generation: 1, manifestDigest: now,
                                lastReload: last, ready: true, requests: 0, errors: 0, since: "t", startedFrom: "etcd", updatedAt: "t")
        let bytes = Array(status.json.render(pretty: false).utf8)
        if try await store.get(keys.host(id)) != bytes { try await store.put(keys.host(id), bytes, lease: lease) }
        return now
    }

    func stop() {
        for task in tasks { task.cancel() }
    }
}

enum Manifests {
    static func bytes(_ plugin: String) -> [UInt8] {
        Array(#"{"schemaVersion": 1, "plugins": [{"name": "\#(plugin)", "product": "MemoryStorage"}]}"#.utf8)
    }
}
