import PlugboardAPI
import PlugboardConcurrency

/// A ``FleetStore`` in memory, for tests and for trying the fleet's logic without etcd.
/// Leases never expire by themselves: ``expire(_:)`` ends one, as a dead host's lease
/// ends, and ``reachable`` set to false makes every call fail as an unreachable etcd does.
public final class InMemoryFleetStore: FleetStore {
    private struct State {
        var values: [String: (value: [UInt8], lease: Int64?)] = [:]
        var leases: Set<Int64> = []
        var nextLease: Int64 = 1
        var reachable = true
        var watchers: [Int: (prefix: String, continuation: AsyncStream<Void>.Continuation)] = [:]
        var nextWatcher = 0
    }
    private let state = LockedValueBox(State())

    public init() {}

    /// False: every call throws `fleet.store_failed`, as with etcd down.
    public var reachable: Bool {
        get { state.withLock { $0.reachable } }
        set {
            state.withLock { $0.reachable = newValue }
            if newValue { notify(key: "") }
        }
    }

    /// Ends `lease` as its TTL running out would: its keys vanish.
    public func expire(_ lease: Int64) {
        let removed = state.withLock { s -> [String] in
            s.leases.remove(lease)
            let keys = s.values.filter { $0.value.lease == lease }.map(\.key)
            for key in keys { s.values[key] = nil }
            return keys
        }
        for key in removed { notify(key: key) }
    }

    /// The lease `key` was written under, if any.
    public func lease(of key: String) -> Int64? { state.withLock { $0.values[key]?.lease } }

    private func check() throws(PlugboardError) {
        guard state.withLock({ $0.reachable }) else {
            throw PlugboardError(.fleetStoreFailed, "could not reach the fleet's store", detail: "The in-memory store is set unreachable.")
        }
    }

    private func notify(key: String) {
        let watchers = state.withLock { s in s.watchers.values.filter { key.hasPrefix($0.prefix) || key.isEmpty } }
        for watcher in watchers { watcher.continuation.yield() }
    }

    public func get(_ key: String) async throws(PlugboardError) -> [UInt8]? {
        try check()
        return state.withLock { $0.values[key]?.value }
    }

    public func list(prefix: String) async throws(PlugboardError) -> [(key: String, value: [UInt8])] {
        try check()
        return state.withLock { s in s.values.filter { $0.key.hasPrefix(prefix) }.map { (key: $0.key, value: $0.value.value) } }
            .sorted { $0.key < $1.key }
    }

    public func put(_ key: String, _ value: [UInt8], lease: Int64?) async throws(PlugboardError) {
        _ = try await transaction(when: [], then: [.put(key, value, lease: lease)])
    }

    public func delete(_ key: String) async throws(PlugboardError) {
        _ = try await transaction(when: [], then: [.delete(key)])
    }

    public func transaction(when conditions: [FleetCondition], then writes: [FleetWrite]) async throws(PlugboardError) -> Bool {
        try check()
        let result: Result<Bool, PlugboardError> = state.withLock { s in
            for condition in conditions {
                switch condition {
                case .absent(let key): if s.values[key] != nil { return .success(false) }
                case .equals(let key, let bytes): if s.values[key]?.value != bytes { return .success(false) }
                }
            }
            for write in writes {
                if case .put(_, _, let lease?) = write, !s.leases.contains(lease) {
                    return .failure(PlugboardError(.fleetStoreFailed, "lease \(lease) does not exist", detail: "It was revoked or expired."))
                }
            }
            for write in writes {
                switch write {
                case .put(let key, let value, let lease): s.values[key] = (value, lease)
                case .delete(let key): s.values[key] = nil
                }
            }
            return .success(true)
        }
        let applied = try result.get()
        if applied {
            for write in writes {
                switch write {
                case .put(let key, _, _), .delete(let key): notify(key: key)
                }
            }
        }
        return applied
    }

    public func grantLease(ttlSeconds: Int) async throws(PlugboardError) -> Int64 {
        try check()
        return state.withLock { s in
            defer { s.nextLease += 1 }
            s.leases.insert(s.nextLease)
            return s.nextLease
        }
    }

    public func keepAlive(_ lease: Int64) async throws(PlugboardError) -> Bool {
        try check()
        return state.withLock { $0.leases.contains(lease) }
    }

    public func revokeLease(_ lease: Int64) async throws(PlugboardError) {
        try check()
        expire(lease)
    }

    public func changes(prefix: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s in
            defer { s.nextWatcher += 1 }
            s.watchers[s.nextWatcher] = (prefix, continuation)
            return s.nextWatcher
        }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.watchers.removeValue(forKey: id) } }
        return stream
    }
}
