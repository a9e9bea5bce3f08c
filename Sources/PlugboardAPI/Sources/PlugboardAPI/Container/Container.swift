#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// The protocol-keyed dependency-injection container that the host and every plugin share.
///
/// Services are keyed by their type, usually a protocol (`(any ObjectStorage).self`), and
/// an optional name. Each key may have several providers; the highest rank wins, and ties
/// go to the earlier registration (OSGi's rule). Changes are applied in transactions, each
/// published as one new generation, so a resolver sees all of a change or none of it.
///
/// ```swift
/// let container = Container(environment: .development)
/// try container.register((any ObjectStorage).self, scope: .singleton) { r in
///     FileStorage(root: "data", logger: try r.resolve())
/// }
/// let storage: any ObjectStorage = try container.resolve()
/// ```
///
/// Constructor injection stays the recommended style: resolve a service's dependencies in
/// its factory and pass them to its initializer, so the service never sees the container.
///
/// ## Threads
/// The container is `Sendable`; resolving takes no lock and may run on any number of
/// threads while others register, replace or unregister. Services are shared across
/// threads: a singleton or instance must be safe to use concurrently (register a
/// non-thread-safe service as `.transient`).
///
/// ## Errors
/// Every failure is a ``PlugboardError``; nothing reachable from this API traps.
public final class Container: ServiceResolver, @unchecked Sendable {
    // @unchecked Sendable: `state` is a LockedBox; `published` is atomic; the rest is
    // immutable after init.

    /// The environment the host runs in, visible to plugins.
    public let environment: Environment
    /// The container this one overlays, if any.
    public let parent: Container?

    let id: UInt64
    /// ``ThreadState/key``, copied so that the resolve path reads a plain field.
    let threadKey: pthread_key_t
    /// The generation of `state.current`, published after the snapshot it names.
    let published = Atomic<UInt64>(0)
    let state: LockedBox<ContainerState>
    let logger: Logger

    private static let ids = Atomic<UInt64>(0)

    /// Creates an empty container.
    ///
    /// - Parameters:
    ///   - environment: The environment plugins see.
    ///   - logger: Where the container reports stop failures and other events nobody awaits.
    public convenience init(environment: Environment = .development, logger: Logger = .disabled) {
        self.init(environment: environment, parent: nil, logger: logger)
    }

    private init(environment: Environment, parent: Container?, logger: Logger) {
        self.environment = environment
        self.parent = parent
        self.logger = logger
        self.id = Self.ids.add(1, ordering: .relaxed).newValue
        self.threadKey = ThreadState.key.value
        self.state = LockedBox(ContainerState())
    }

    /// A child container that sees every service of this one and may override any of them
    /// without changing this one: for tests and per-request overrides.
    ///
    /// Transient services of this container resolved through the overlay build their
    /// dependencies through the overlay, so its overrides apply; singletons of this
    /// container are built against this container only, since they are shared.
    public func overlay() -> Container {
        Container(environment: environment, parent: self, logger: logger)
    }

    // MARK: - Snapshots

    /// The snapshot this thread should read, kept alive by this thread's cache slot.
    @inline(__always)
    func currentSnapshot(_ ts: UnsafeMutablePointer<ThreadState>) -> Unmanaged<Snapshot> {
        let generation = published.load(ordering: .acquiring)
        if let hit = ts.pointee.cachedSnapshot(containerID: id, generation: generation) { return hit }
        return refreshSnapshot(ts)
    }

    @inline(never)
    private func refreshSnapshot(_ ts: UnsafeMutablePointer<ThreadState>) -> Unmanaged<Snapshot> {
        let snapshot = state.withLock { $0.current }
        ts.pointee.cache(snapshot, containerID: id)
        return Unmanaged.passUnretained(snapshot)
    }

    /// The current snapshot, retained: for slow paths that run user code.
    func snapshotNow() -> Snapshot { state.withLock { $0.current } }

    // MARK: - Resolve

    /// Resolves the best provider of `type`.
    ///
    /// ```swift
    /// let storage = try container.resolve((any ObjectStorage).self)
    /// let same: any ObjectStorage = try container.resolve()
    /// ```
    /// - Throws: `container.not_registered` (with the closest registered services),
    ///   `container.circular_dependency`, `container.factory_failed`.
    public func resolve<T>(_ type: T.Type = T.self) throws(PlugboardError) -> T {
        let ts = ThreadState.current(key: threadKey)
        let snap = currentSnapshot(ts)
        let reg = snap._withUnsafeGuaranteedRef { $0.winner(at: $0.index(ofType: ObjectIdentifier(type))) }
        if let reg {
            if let p = reg._withUnsafeGuaranteedRef({ $0.built.load(ordering: .acquiring) }) {
                return builtValue(p, as: T.self)
            }
            return try build(reg.takeUnretainedValue(), as: type, ts: ts,
                             view: ResolutionView(container: self, pinned: snap.takeUnretainedValue()))
        }
        return try resolveMissing(ServiceKey(type: ObjectIdentifier(type), name: nil), as: type, ts: ts,
                                  snapshot: snap.takeUnretainedValue(), requester: self)
    }

    /// Every provider of `type` (under `name`), best first, building any not built yet.
    public func resolveAll<T>(_ type: T.Type = T.self, name: String? = nil) throws(PlugboardError) -> [T] {
        let ts = ThreadState.current()
        let snap = currentSnapshot(ts).takeUnretainedValue()
        return try ResolutionView(container: self, pinned: snap)
            .resolveAll(ServiceKey(type: ObjectIdentifier(type), name: name), as: type, ts: ts)
    }

    /// Whether anything provides `type` (under `name`), here or in a parent.
    public func isRegistered<T>(_ type: T.Type, name: String? = nil) -> Bool {
        let key = ServiceKey(type: ObjectIdentifier(type), name: name)
        return ResolutionView(container: self, pinned: snapshotNow()).lookup(key) != nil
    }

    /// A live handle on `type`: ``ServiceHandle/current`` always gives the best provider
    /// of the current generation, with no lookup while nothing has changed.
    public func handle<T>(_ type: T.Type = T.self, name: String? = nil) -> ServiceHandle<T> {
        let key = ServiceKey(type: ObjectIdentifier(type), name: name)
        let index = state.withLock { st in st.index(for: key) }
        return ServiceHandle(container: self, key: key, index: index)
    }

    /// A value of the current generation for a unit of work; see ``Lease``.
    public func lease() -> Lease {
        let snapshot = state.withLock { st -> Snapshot in
            st.leases[st.current.generation, default: 0] += 1
            return st.current
        }
        return Lease(container: self, snapshot: snapshot)
    }

    /// Runs `body` with a lease on the current generation, released when it returns.
    public func withLease<R>(_ body: (Lease) async throws -> R) async rethrows -> R {
        let lease = lease()
        defer { lease.release() }
        return try await body(lease)
    }

    /// The generation resolvers see now; it grows by one with each published change.
    public var generation: UInt64 { published.load(ordering: .acquiring) }
}
