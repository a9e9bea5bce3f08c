import PlugboardAPI
import PlugboardJSON

extension EtcdClient {
    /// Grants a lease of `ttl` seconds; returns its id. Keys put under it vanish when it
    /// expires: keep it alive (``keepAliveOnce(_:)``, or an ``EtcdSession``).
    public func grantLease(ttl: Int) async throws(PlugboardError) -> Int64 {
        let path = "/v3/lease/grant"
        // A grant sent twice leaves a second lease unused, which expires by itself.
        let (root, endpoint) = try await call(path, .object([("TTL", .string(String(ttl)))]))
        let (id, granted) = try decode(path, endpoint) { () throws(EtcdGateway.Malformed) in try EtcdGateway.lease(root) }
        guard id != 0, granted > 0 else {
            throw .etcdMalformed(path, endpoint, expected: "a lease ID and a TTL above 0", found: "ID \(id), TTL \(granted)")
        }
        return id
    }

    /// Renews lease `id` once; returns the TTL it has again, in seconds.
    ///
    /// - Throws: `etcd.lease_expired` when etcd no longer knows it (expired, revoked).
    public func keepAliveOnce(_ id: Int64) async throws(PlugboardError) -> Int {
        let path = "/v3/lease/keepalive"
        // etcd streams keep-alives; the gateway answers each request of the stream with
        // one `{"result": ...}`, and a body with one request ends the stream after it.
        let (root, endpoint) = try await call(path, .object([("ID", .string(String(id)))]))
        if let refusal = EtcdGateway.error(root, status: 200) { throw Self.refused(path, endpoint, refusal) }
        let ttl = try decode(path, endpoint) { () throws(EtcdGateway.Malformed) -> Int64 in
            guard let result = root["result"] else {
                throw EtcdGateway.Malformed(expected: "a keep-alive answer with a \"result\"", found: root.kindDescription)
            }
            return try EtcdGateway.lease(result).ttl
        }
        guard ttl > 0 else {
            throw PlugboardError(.etcdLeaseExpired, "etcd lease \(id) expired",
                detail: "The member at \(endpoint) answered the keep-alive with no time left: the lease expired or was revoked, and the keys put under it are gone.",
                hint: "Grant a new lease and put the keys again under it (an EtcdSession does both).")
        }
        return Int(ttl)
    }

    /// Revokes lease `id`: the keys put under it are deleted now. A lease etcd no longer
    /// knows is revoked already, which is not an error.
    public func revokeLease(_ id: Int64) async throws(PlugboardError) {
        do {
            _ = try await call("/v3/lease/revoke", .object([("ID", .string(String(id)))]))
        } catch where error.code == .etcdLeaseExpired {
            return
        }
    }
}
