import Synchronization

/// Anything services can be resolved from: a ``Container``, the ``Resolver`` a factory is
/// given, a ``Lease``.
public protocol ServiceResolver: Sendable, ~Copyable {
    /// Resolves the best provider of `type` registered under `name` (nil: unnamed).
    func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T
}

extension ServiceResolver where Self: ~Copyable {
    /// Resolves the best unnamed provider of `type`; `let s: any ObjectStorage = try r.resolve()`.
    public func resolve<T>(_ type: T.Type = T.self) throws(PlugboardError) -> T {
        try resolve(type, name: nil)
    }
}

/// What a factory resolves its dependencies through, for the length of the factory call.
///
/// Within a lease it reads the lease's generation, and during a transaction's commit it
/// also sees the transaction's own registrations; otherwise it reads the current
/// generation, as the container does.
///
/// It is noncopyable and lent to the factory (`borrowing`), so it cannot outlive the call:
/// that is what lets the container hand it out without retaining anything, which keeps a
/// transient resolve close to the cost of the allocation it makes. To resolve lazily
/// later, keep a ``ServiceHandle`` (or the container) instead:
///
/// ```swift
/// try container.register((any Uploader).self) { r in
///     DefaultUploader(storage: try r.resolve(), later: container.handle((any Cache).self))
/// }
/// ```
public struct Resolver: ServiceResolver, ~Copyable {
    // Unretained: the container and the pinned snapshot outlive every factory call (the
    // resolve that calls the factory holds them), and a noncopyable value lent to the
    // factory cannot escape it.
    private let container: Unmanaged<Container>
    private let pinned: Unmanaged<Snapshot>?

    init(container: Container, pinned: Snapshot?) {
        self.container = Unmanaged.passUnretained(container)
        self.pinned = pinned.map { Unmanaged.passUnretained($0) }
    }

    init(view: ResolutionView) {
        self.init(container: view.container, pinned: view.pinned)
    }

    var view: ResolutionView {
        ResolutionView(container: container.takeUnretainedValue(), pinned: pinned?.takeUnretainedValue())
    }

    /// The environment the host runs in.
    public var environment: Environment { container.takeUnretainedValue().environment }

    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        let view = self.view
        return try view.resolve(ServiceKey(T.self, name: name), as: type,
                                ts: ThreadState.current(), requester: view.container)
    }

    /// The provider a layer wraps: the registration of `key` owned by `owner`, in this
    /// resolver's generation (the staged one during a commit), built if it is not yet.
    func resolveBelow<T>(_ key: ServiceKey, wrapping owner: String, as type: T.Type) throws(PlugboardError) -> T {
        guard let below = try provider(key, ownedBy: owner, as: type) else {
            let service = ServiceType.of(T.self).displayName
            throw PlugboardError(.layerTargetMissing, "a layer wraps \"\(owner)\", which provides no \(service)",
                detail: "Expected a provider of \(service) owned by \"\(owner)\" in the generation being built, found none.",
                hint: "Make \"wraps\" name the plugin that registers \(service), and load that plugin.")
        }
        return below
    }

    /// Every provider of `type`, best first.
    public func resolveAll<T>(_ type: T.Type = T.self, name: String? = nil) throws(PlugboardError) -> [T] {
        try view.resolveAll(ServiceKey(T.self, name: name), as: type, ts: ThreadState.current())
    }
}

extension Container {
    /// Resolves the best provider of `type` registered under `name` (nil: unnamed).
    ///
    /// A built value is read as an unnamed resolve reads it, with no lock, no retain and
    /// no `Hasher`: the snapshot's named table is probed with a hash of the name's bytes.
    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        guard let name else { return try resolve(type) }
        let ts = ThreadState.current(key: threadKey)
        let tables = currentSlot(ts).pointee.tables.unsafelyUnwrapped
        let winner = tables.pointee.winner(at: tables.pointee.index(ofType: ObjectIdentifier(T.self), name: name))
        if let cell = winner.cell, let p = cell.pointee.load(ordering: .acquiring) {
            return p.assumingMemoryBound(to: T.self).pointee
        }
        if let factory = winner.transientFactory, let registration = winner.registration {
            return try _makeTransient(type, factory: factory, registration: registration)
        }
        if winner.registration == nil && parent == nil { throw missed(T.self, name: name, ts: ts) }
        return try ResolutionView(container: self, pinned: nil)
            .resolve(ServiceKey(T.self, name: name), as: type, ts: ts, requester: self)
    }
}
