import PlugboardAPI
import PlugboardEtcd

/// The fleet's store over etcd (PlugboardEtcd's client): keys, leases, transactions and
/// watches as etcd has them. A thin adapter; failures keep etcd's codes (`etcd.*`).
public final class EtcdFleetStore: FleetStore {
    public let client: EtcdClient

    public init(client: EtcdClient) {
        self.client = client
    }

    public func get(_ key: String) async throws(PlugboardError) -> [UInt8]? {
        try await client.get(key).0?.value
    }

    public func list(prefix: String) async throws(PlugboardError) -> [(key: String, value: [UInt8])] {
        try await client.range(prefix: prefix).kvs.map { (key: $0.key, value: $0.value) }.sorted { $0.key < $1.key }
    }

    public func put(_ key: String, _ value: [UInt8], lease: Int64?) async throws(PlugboardError) {
        _ = try await client.put(key, value, lease: lease)
    }

    public func delete(_ key: String) async throws(PlugboardError) {
        _ = try await client.delete(key, prefix: false)
    }

    public func transaction(when conditions: [FleetCondition], then writes: [FleetWrite]) async throws(PlugboardError) -> Bool {
        let compare = conditions.map { condition -> EtcdCompare in
            switch condition {
            // A key that does not exist has create revision 0.
            case .absent(let key): return EtcdCompare(key, .createRevision, .equal, 0)
            case .equals(let key, let bytes): return EtcdCompare(key, value: .equal, bytes)
            }
        }
        let success = writes.map { write -> EtcdOperation in
            switch write {
            case .put(let key, let value, let lease): return .put(key, value, lease: lease)
            case .delete(let key): return .delete(key, prefix: false)
            }
        }
        return try await client.txn(EtcdTxn(compare: compare, success: success)).succeeded
    }

    public func grantLease(ttlSeconds: Int) async throws(PlugboardError) -> Int64 {
        try await client.grantLease(ttl: ttlSeconds)
    }

    public func keepAlive(_ lease: Int64) async throws(PlugboardError) -> Bool {
        do {
            _ = try await client.keepAliveOnce(lease)
            return true
        } catch where error.code == .etcdLeaseExpired {
            return false
        }
    }

    public func revokeLease(_ lease: Int64) async throws(PlugboardError) {
        try await client.revokeLease(lease)
    }

    public func changes(prefix: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let watch = client.watch(key: prefix, prefix: true, fromRevision: nil)
        let task = Task {
            for await _ in watch { continuation.yield() }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
