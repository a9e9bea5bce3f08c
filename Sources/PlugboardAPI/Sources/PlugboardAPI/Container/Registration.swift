import Synchronization

/// One registration: a service key, its provider, and everything introspection shows.
///
/// Registrations are immutable once published, except for three cells, each with its own
/// discipline:
/// - `built` points at the value of an instance or a built singleton (inside the
///   `ValueBox` that `valueOwner` retains): written once (with release ordering, after
///   `valueOwner`) and never changed, so readers need only an acquiring load;
/// - `buildOwner` is guarded by the global ``BuildCoordinator`` lock;
/// - `sequence`, `generation` and `learnedImplementation` are guarded by the owning
///   container's lock.
///
/// `@unchecked Sendable` for those reasons.
final class Registration: @unchecked Sendable {
    let key: ServiceKey
    let serviceType: ServiceType
    let rank: Int
    let owner: String
    let scope: Scope
    /// Started before its transaction is published, stopped after it has been retired.
    let managed: Bool
    let factory: (any AnyFactoryBox)?
    /// The declared implementation type, if the registrant named one.
    let declaredImplementation: ServiceType?
    /// For a layer, the owner of the registration of the same key it wraps: it stands just
    /// above that registration in the ranking and its factory is handed that provider.
    let wraps: String?
    /// Its transaction's ``Transaction/requires``: the owners its factory may resolve by owner.
    let requires: [String]?
    /// For a layer: whether its stack may stand below a better provider of its key
    /// (``Transaction/registerLayer(_:name:managed:mayBeOutranked:factory:)``).
    let mayBeOutranked: Bool

    /// The value of a built singleton or instance, or nil until it is built. The cell has
    /// its own allocation so that snapshots can point at it and the resolve path can load
    /// it without touching (and so retaining) the registration.
    let builtCell: UnsafeMutablePointer<Atomic<UnsafeRawPointer?>>
    /// The retained `ValueBox<T>` that owns `built`'s value.
    private let valueOwner = Atomic<UnsafeRawPointer?>(nil)
    /// The weak reference of a weak-scoped registration.
    let weakCell: LockedBox<WeakReference>?

    // Guarded by the container's lock.
    var sequence: UInt64 = 0
    var generation: UInt64 = 0
    var learnedImplementation: ServiceType?

    // Guarded by BuildCoordinator's lock: the token of the thread building this singleton.
    var buildOwner: UInt64 = 0

    init(key: ServiceKey, serviceType: ServiceType, rank: Int, owner: String, scope: Scope,
         managed: Bool, factory: (any AnyFactoryBox)?, value: (any AnyValueBox)?,
         declaredImplementation: ServiceType?, wraps: String? = nil, requires: [String]? = nil,
         mayBeOutranked: Bool = false) {
        self.key = key
        self.serviceType = serviceType
        self.rank = rank
        self.owner = owner
        self.scope = scope
        self.managed = managed
        self.factory = factory
        self.declaredImplementation = declaredImplementation
        self.wraps = wraps
        self.requires = requires
        self.mayBeOutranked = mayBeOutranked
        self.weakCell = scope == .weak ? LockedBox(WeakReference()) : nil
        self.builtCell = .allocate(capacity: 1)
        self.builtCell.initialize(to: Atomic(nil))
        if let value { publish(value) }
    }

    deinit {
        if let p = valueOwner.load(ordering: .acquiring) {
            Unmanaged<AnyObject>.fromOpaque(p).release()
        }
        builtCell.deinitialize(count: 1)
        builtCell.deallocate()
    }

    /// The built value's address, or nil.
    @inline(__always)
    var built: UnsafeRawPointer? { builtCell.pointee.load(ordering: .acquiring) }

    /// The built value, type-erased, if there is one.
    var builtValue: Any? {
        guard let p = valueOwner.load(ordering: .acquiring) else { return nil }
        let box = Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue()
        return (box as? any AnyValueBox)?.anyValue
    }

    /// Publishes a freshly built singleton value. Called once, by the thread that owns the
    /// build, before it wakes any waiter.
    func publish(_ box: any AnyValueBox) {
        valueOwner.store(UnsafeRawPointer(Unmanaged.passRetained(box as AnyObject).toOpaque()), ordering: .releasing)
        builtCell.pointee.store(box.rawPointer, ordering: .releasing)
    }

    /// Ranking order: higher rank first, then earlier registration.
    static func ranksBefore(_ a: Registration, _ b: Registration) -> Bool {
        a.rank != b.rank ? a.rank > b.rank : a.sequence < b.sequence
    }

    var displayName: String {
        let base = serviceType.displayName
        return key.name.map { "\(base) (name \"\($0)\")" } ?? base
    }
}
