import Synchronization

/// A hold on one generation for the length of a unit of work (an HTTP request, a job).
///
/// Everything resolved through a lease comes from the generation it was taken on, so a
/// request never sees half of a swap. Managed services replaced after the lease was taken
/// are not stopped until it (and every other lease on an older generation) has ended.
/// Plain resolves are not tracked; only leases hold a swap's stop back.
///
/// ```swift
/// try await container.withLease { lease in
///     let storage: any ObjectStorage = try lease.resolve()
///     return try await storage.get(key)
/// }
/// ```
///
/// - Important: End every lease: call ``release()`` (or use ``Container/withLease(_:)``);
///   a lease also ends when it is deinitialized.
public final class Lease: ServiceResolver, @unchecked Sendable {
    // @unchecked Sendable: `released` is atomic; the rest is immutable.
    let container: Container
    let snapshot: Snapshot
    /// An atomic, not a lock: a lease is taken for every request, and a lock costs
    /// allocations.
    private let released = Atomic<Bool>(false)

    init(container: Container, snapshot: Snapshot) {
        self.container = container
        self.snapshot = snapshot
    }

    deinit { release() }

    /// The generation this lease holds.
    public var generation: UInt64 { snapshot.generation }

    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        try ResolutionView(container: container, pinned: snapshot)
            .resolve(ServiceKey(T.self, name: name), as: type,
                     ts: ThreadState.current(), requester: container)
    }

    /// Ends the lease; later calls do nothing.
    public func release() {
        let (first, _) = released.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        if first { container.releaseLease(snapshot) }
    }
}
