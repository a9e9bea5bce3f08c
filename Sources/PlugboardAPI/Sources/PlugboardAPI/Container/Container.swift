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

    /// This thread's cache slot for this container, holding the current snapshot.
    @inline(__always)
    func currentSlot(_ ts: UnsafeMutablePointer<ThreadState>) -> UnsafeMutablePointer<ThreadState.Slot> {
        let generation = published.load(ordering: .acquiring)
        let first = ts.pointee.slots
        if first.pointee.containerID == id && first.pointee.generation == generation { return first }
        return otherSlot(ts, generation: generation)
    }

    /// Another slot of this thread's cache, or a refreshed one: off the hot path, so the
    /// common case stays a few instructions.
    @inline(never)
    private func otherSlot(_ ts: UnsafeMutablePointer<ThreadState>, generation: UInt64) -> UnsafeMutablePointer<ThreadState.Slot> {
        if let hit = ts.pointee.otherSlot(containerID: id, generation: generation) { return hit }
        let snapshot = state.withLock { $0.current }
        return ts.pointee.cache(snapshot, containerID: id)
    }

    /// The snapshot this thread reads now, retained: for slow paths that run user code.
    func currentSnapshot(_ ts: UnsafeMutablePointer<ThreadState>) -> Snapshot {
        currentSlot(ts).pointee.snapshot?.takeUnretainedValue() ?? snapshotNow()
    }

    /// The current snapshot, retained, read under the lock.
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
    ///
    /// Inlinable so that the caller copies the value as its own, specialized type; the
    /// lookup itself stays in the library (``_builtValue(ofType:registration:)``). Part of
    /// the plugin ABI.
    @inlinable
    public func resolve<T>(_ type: T.Type = T.self) throws(PlugboardError) -> T {
        var registration: UnsafeRawPointer?
        var factory: UnsafeRawPointer?
        // `T.self`, not `type`: registrations are keyed by their static type (ServiceKey).
        if let p = _builtValue(ofType: ObjectIdentifier(T.self), registration: &registration, transientFactory: &factory) {
            return p.assumingMemoryBound(to: T.self).pointee
        }
        if let factory, let registration {
            return try _makeTransient(type, factory: factory, registration: registration)
        }
        return try _resolve(type, registration: registration)
    }

    /// The built value of the best unnamed provider of `type`, or nil; then
    /// `registration` is that provider (unretained; alive until this thread's next
    /// resolve) or nil if there is none here, and `transientFactory` its factory if it is
    /// transient.
    ///
    /// The lock-free read path: one thread-local load, one atomic load of the published
    /// generation, a compare with this thread's slot, a probe of the snapshot's table, an
    /// atomic load of the winner's value cell. No reference is retained.
    @usableFromInline
    func _builtValue(ofType type: ObjectIdentifier, registration: inout UnsafeRawPointer?,
                     transientFactory: inout UnsafeRawPointer?) -> UnsafeRawPointer? {
        let ts = ThreadState.current(key: threadKey)
        let tables = currentSlot(ts).pointee.tables.unsafelyUnwrapped
        let winner = tables.pointee.winner(at: tables.pointee.index(ofType: type))
        if let cell = winner.cell, let p = cell.pointee.load(ordering: .acquiring) { return p }
        registration = winner.registration
        transientFactory = winner.transientFactory
        return nil
    }

    /// The same, by key index, for ``ServiceHandle``.
    @inline(__always)
    func lookupBuilt(atIndex index: Int, registration: inout UnsafeRawPointer?,
                     transientFactory: inout UnsafeRawPointer?) -> UnsafeRawPointer? {
        let ts = ThreadState.current(key: threadKey)
        let winner = currentSlot(ts).pointee.tables.unsafelyUnwrapped.pointee.winner(at: index)
        if let cell = winner.cell, let p = cell.pointee.load(ordering: .acquiring) { return p }
        registration = winner.registration
        transientFactory = winner.transientFactory
        return nil
    }

    /// Builds a transient found by the fast path. Nothing is retained: the registration
    /// and its factory belong to the snapshot this thread's slot holds, and while a
    /// factory runs the thread defers releasing any snapshot it stops caching.
    @usableFromInline
    func _makeTransient<T>(_ type: T.Type, factory: UnsafeRawPointer,
                           registration: UnsafeRawPointer) throws(PlugboardError) -> T {
        let ts = ThreadState.current(key: threadKey)
        let reg = Unmanaged<Registration>.fromOpaque(registration)
        try ts.pointee.enter(reg)
        defer { ts.pointee.leave() }
        do {
            return try Unmanaged<FactoryBox<T>>.fromOpaque(factory)._withUnsafeGuaranteedRef { try $0.make(resolvingIn: self) }
        } catch {
            throw Self.factoryError(error, reg.takeUnretainedValue())
        }
    }

    /// The rest of a resolve: build `registration` (found by ``_builtValue(ofType:registration:)``
    /// on this thread, so still alive) or, without one, look in the parents and report a miss.
    @usableFromInline
    func _resolve<T>(_ type: T.Type, registration: UnsafeRawPointer?) throws(PlugboardError) -> T {
        let ts = ThreadState.current(key: threadKey)
        if let registration {
            let reg = Unmanaged<Registration>.fromOpaque(registration).takeUnretainedValue()
            return try build(reg, as: type, ts: ts, view: ResolutionView(container: self, pinned: nil))
        }
        guard parent != nil else { throw missed(T.self, name: nil, ts: ts) }
        return try ResolutionView(container: self, pinned: nil)
            .resolve(ServiceKey(T.self, name: nil), as: type, ts: ts, requester: self)
    }

    /// Every provider of `type` (under `name`), best first, building any not built yet.
    public func resolveAll<T>(_ type: T.Type = T.self, name: String? = nil) throws(PlugboardError) -> [T] {
        try ResolutionView(container: self, pinned: nil)
            .resolveAll(ServiceKey(T.self, name: name), as: type, ts: ThreadState.current(key: threadKey))
    }

    /// Whether anything provides `type` (under `name`), here or in a parent.
    public func isRegistered<T>(_ type: T.Type, name: String? = nil) -> Bool {
        let key = ServiceKey(T.self, name: name)
        return ResolutionView(container: self, pinned: snapshotNow()).lookup(key, ts: ThreadState.current(key: threadKey)) != nil
    }

    /// A live handle on `type`: ``ServiceHandle/current`` always gives the best provider
    /// of the current generation, with no lookup while nothing has changed.
    public func handle<T>(_ type: T.Type = T.self, name: String? = nil) -> ServiceHandle<T> {
        let key = ServiceKey(T.self, name: name)
        let index = state.withLock { st in st.index(for: key) }
        return ServiceHandle(container: self, key: key, index: index)
    }

    /// A value of the current generation for a unit of work; see ``Lease``.
    public func lease() -> Lease {
        let ts = ThreadState.current(key: threadKey)
        while true {
            // Count first, then check the generation is still current (both sequentially
            // consistent, as a publish stores the generation and then reads the counts):
            // either the drain check sees this count or this lease sees the new
            // generation, uncounts itself and takes that one. No lock, no hashing.
            let snapshot = currentSnapshot(ts)
            snapshot.leases.add(1, ordering: .sequentiallyConsistent)
            if published.load(ordering: .sequentiallyConsistent) == snapshot.generation {
                return Lease(container: self, snapshot: snapshot)
            }
            releaseLease(snapshot)
        }
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
