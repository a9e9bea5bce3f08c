/// A service with a life: started before anyone can resolve it, stopped after it has been
/// replaced or unregistered and every unit of work that could still use it has ended.
///
/// Register it with `managed: true` in a transaction. `start` runs before the transaction
/// is published (a service that fails to start is never visible); `stop` runs once its
/// generation has drained (see ``Lease``), in reverse start order, and at shutdown.
///
/// Implementation requirements:
/// - `start` may throw; the registration is then rolled back and `stop` is not called.
/// - `stop` must not throw and should finish promptly; it is called at most once.
/// - Neither may call `exit` or trap: that would take the host down.
public protocol ManagedService: Sendable {
    /// Acquires what the service needs (connections, files, threads).
    func start() async throws
    /// Releases it. Called once, after the service can no longer be resolved.
    func stop() async
}
