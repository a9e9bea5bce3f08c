import PlugboardAPI

/// What the fleet needs of its store, and nothing more: etcd's keys, leases, one kind of
/// transaction and change notifications. ``InMemoryFleetStore`` is the in-memory driver
/// the unit tests use; `EtcdFleetStore` the one over etcd.
///
/// Implementation requirements: a ``put(_:_:lease:)`` under a lease is deleted when the
/// lease ends (revoked, or not kept alive for its TTL); ``transaction(when:then:)`` checks
/// every condition and applies every write atomically, or none; ``changes(prefix:)``
/// yields at least once after any write under the prefix, and may yield more often (after
/// a reconnect, for example): a reader reads again on each element.
public protocol FleetStore: Sendable {
    /// The value under `key`, or nil.
    func get(_ key: String) async throws(PlugboardError) -> [UInt8]?
    /// Every key under `prefix` with its value, sorted by key.
    func list(prefix: String) async throws(PlugboardError) -> [(key: String, value: [UInt8])]
    /// Writes `value` under `key`, tied to `lease` when given.
    func put(_ key: String, _ value: [UInt8], lease: Int64?) async throws(PlugboardError)
    /// Deletes `key` (a missing key is no error).
    func delete(_ key: String) async throws(PlugboardError)
    /// Applies `writes` if every condition holds; returns whether it did.
    func transaction(when conditions: [FleetCondition], then writes: [FleetWrite]) async throws(PlugboardError) -> Bool
    /// A new lease that lasts `ttlSeconds` unless kept alive.
    func grantLease(ttlSeconds: Int) async throws(PlugboardError) -> Int64
    /// Renews `lease`; false when it has already ended (its keys are gone).
    func keepAlive(_ lease: Int64) async throws(PlugboardError) -> Bool
    /// Ends `lease` now, deleting its keys.
    func revokeLease(_ lease: Int64) async throws(PlugboardError)
    /// Wakes its reader after changes under `prefix`; ends when the reading task is
    /// cancelled.
    func changes(prefix: String) -> AsyncStream<Void>
}

/// A condition of ``FleetStore/transaction(when:then:)``.
public enum FleetCondition: Sendable, Equatable {
    /// No value under the key.
    case absent(String)
    /// The key holds exactly these bytes.
    case equals(String, [UInt8])
}

/// A write of ``FleetStore/transaction(when:then:)``.
public enum FleetWrite: Sendable, Equatable {
    case put(String, [UInt8], lease: Int64?)
    case delete(String)
}
