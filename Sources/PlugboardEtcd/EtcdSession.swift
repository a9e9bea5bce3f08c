import PlugboardAPI
import PlugboardConcurrency
import PlugboardHTTPClient

/// A lease kept alive in the background, for keys that must vanish when their owner
/// does (etcd's `concurrency.Session`): a fleet host's membership key.
///
/// The session grants a lease of `ttl` seconds and renews it every `ttl / 3`. When the
/// lease is lost (etcd was unreachable for longer than the TTL, so the lease expired and
/// its keys were deleted), it grants a new one as soon as etcd answers and calls
/// `onNewLease` with it, so that the owner puts its keys again under the new lease. The
/// first lease is announced the same way. ``close()`` revokes the lease, which deletes
/// its keys at once.
///
/// ```swift
/// let session = EtcdSession(client: client, ttl: 10, logger: logger) { lease in
///     try? await client.put("/fleet/hosts/\(id)", record, lease: lease)
/// }
/// ```
public final class EtcdSession: Sendable {
    private struct State {
        var leaseID: Int64?
        var task: Task<Void, Never>?
        var closed = false
    }

    private let client: EtcdClient
    private let logger: Logger
    private let state = LockedValueBox(State())

    /// Starts the session: the first lease is granted in the background.
    ///
    /// - Parameters:
    ///   - ttl: the lease's time to live in seconds (at least 2; etcd may raise it to its minimum).
    ///   - onNewLease: called with each lease granted, the first included, before the
    ///     session renews it; the session waits for it to return.
    public init(client: EtcdClient, ttl: Int, logger: Logger, onNewLease: @escaping @Sendable (Int64) async -> Void) {
        self.client = client
        self.logger = logger
        let ttl = max(ttl, 2)
        let state = self.state
        let task = Task {
            await Self.run(client: client, ttl: ttl, logger: logger, state: state, onNewLease: onNewLease)
        }
        state.withLock { $0.task = task }
    }

    deinit {
        state.withLock { $0.task }?.cancel()
    }

    /// The lease in force; nil before the first grant and while a lost one is replaced.
    public var leaseID: Int64? { state.withLock { $0.leaseID } }

    /// Stops renewing and revokes the lease (its keys are deleted at once). A lease that
    /// cannot be revoked (etcd unreachable) is logged and expires after its TTL.
    public func close() async {
        let (task, lease) = state.withLock { state -> (Task<Void, Never>?, Int64?) in
            state.closed = true
            defer { state.leaseID = nil }
            return (state.task, state.leaseID)
        }
        task?.cancel()
        await task?.value
        guard let lease else { return }
        do {
            try await client.revokeLease(lease)
        } catch {
            logger.warning("could not revoke etcd lease \(lease); it expires by its TTL", metadata: ["error": "\(error.message)"])
        }
    }

    private static func run(client: EtcdClient, ttl: Int, logger: Logger, state: LockedValueBox<State>,
                            onNewLease: @Sendable (Int64) async -> Void) async {
        let interval = Duration.milliseconds(ttl * 1000 / 3)
        var failures = 0
        while !Task.isCancelled {
            let current = state.withLock { $0.leaseID }
            do throws(PlugboardError) {
                if let current {
                    _ = try await client.keepAliveOnce(current)
                } else {
                    let lease = try await client.grantLease(ttl: ttl)
                    let keep = state.withLock { state -> Bool in
                        guard !state.closed else { return false }
                        state.leaseID = lease
                        return true
                    }
                    guard keep else {
                        try? await client.revokeLease(lease)
                        return
                    }
                    logger.info("etcd lease \(lease) granted (TTL \(ttl) s)")
                    await onNewLease(lease)
                }
                if failures > 0 { logger.notice("etcd lease renewal works again") }
                failures = 0
                try? await Task.sleep(for: interval)
            } catch where error.code == .etcdLeaseExpired {
                logger.warning("etcd lease \(current ?? 0) expired; granting a new one (its keys are put again)")
                state.withLock { $0.leaseID = nil }
            } catch where error.code == .etcdCancelled {
                return
            } catch {
                if failures == 0 {
                    logger.warning("could not renew etcd lease \(current ?? 0): \(error.message); trying again",
                                   metadata: ["detail": "\(error.detail ?? "")"])
                }
                failures += 1
                // Soon, but not in a tight loop: each attempt already went through every member.
                try? await Task.sleep(for: min(interval, client.retry.delay(beforeRetry: failures, unit: 1)))
            }
        }
    }
}
