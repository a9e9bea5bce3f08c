import PlugboardAPI
import PlugboardJSON

extension EtcdClient {
    /// The key's value and revisions (nil when absent), and the store's revision.
    ///
    /// - Throws: `etcd.unreachable`, `etcd.request_failed`, `etcd.malformed_answer`.
    public func get(_ key: String) async throws(PlugboardError) -> (EtcdKeyValue?, revision: Int64) {
        let path = "/v3/kv/range"
        let (root, endpoint) = try await call(path, .object(EtcdGateway.range(key, prefix: false)))
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in
            (try EtcdGateway.keyValues(root).first, try EtcdGateway.revision(root))
        }
    }

    /// The key as it was at `revision`, and the store's revision now.
    ///
    /// - Throws: `etcd.compacted` when compaction removed that revision, and the errors of ``get(_:)``.
    public func get(_ key: String, atRevision revision: Int64) async throws(PlugboardError) -> (EtcdKeyValue?, revision: Int64) {
        let path = "/v3/kv/range"
        let (root, endpoint) = try await call(path, .object(EtcdGateway.range(key, prefix: false) + [("revision", .string(String(revision)))]))
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in
            (try EtcdGateway.keyValues(root).first, try EtcdGateway.revision(root))
        }
    }

    /// Every key that starts with `prefix`, in key order, and the store's revision.
    public func range(prefix: String) async throws(PlugboardError) -> (kvs: [EtcdKeyValue], revision: Int64) {
        let path = "/v3/kv/range"
        let (root, endpoint) = try await call(path, .object(EtcdGateway.range(prefix, prefix: true)))
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in
            (try EtcdGateway.keyValues(root), try EtcdGateway.revision(root))
        }
    }

    /// Puts `value` at `key`, attached to `lease` when given; returns the revision of the put.
    ///
    /// - Throws: `etcd.lease_expired` when the lease is not known, and the errors of ``get(_:)``.
    @discardableResult
    public func put(_ key: String, _ value: [UInt8], lease: Int64? = nil) async throws(PlugboardError) -> Int64 {
        let path = "/v3/kv/put"
        let (root, endpoint) = try await call(path, EtcdGateway.put(key, value, lease: lease))
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in try EtcdGateway.revision(root) }
    }

    /// Deletes `key`, or every key under it when `prefix`; returns the store's revision after.
    @discardableResult
    public func delete(_ key: String, prefix: Bool = false) async throws(PlugboardError) -> Int64 {
        let path = "/v3/kv/deleterange"
        let (root, endpoint) = try await call(path, .object(EtcdGateway.range(key, prefix: prefix)))
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in try EtcdGateway.revision(root) }
    }

    /// Runs `txn` atomically.
    ///
    /// - Throws: `etcd.outcome_unknown` when the connection broke after it was sent (read
    ///   to learn whether it applied), and the errors of ``put(_:_:lease:)``.
    public func txn(_ txn: EtcdTxn) async throws(PlugboardError) -> EtcdTxnResult {
        let path = "/v3/kv/txn"
        let (root, endpoint) = try await call(path, EtcdGateway.txn(txn), idempotent: false)
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in try EtcdGateway.txnResult(root) }
    }

    /// Compacts the history up to `revision`: a watch or read from before it can no
    /// longer be served (a watch then resyncs, ``EtcdWatchEvent/resynced(_:revision:)``).
    public func compact(revision: Int64) async throws(PlugboardError) {
        _ = try await call("/v3/kv/compaction", .object([("revision", .string(String(revision))), ("physical", .bool(true))]))
    }

    /// The member id of the cluster's leader as the member at `endpoint` sees it, and
    /// that member's own id (`/v3/maintenance/status`, asked of that member alone).
    public func status(of endpoint: EtcdEndpoint) async throws(PlugboardError) -> (leader: UInt64, member: UInt64) {
        let path = "/v3/maintenance/status"
        let (root, _) = try await call(path, .object([]), only: endpoint)
        return try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in try EtcdGateway.status(root) }
    }
}
