/// A batch of registrations and removals by one owner, applied all-or-nothing.
///
/// Build it inside ``Container/transaction(owner:rank:_:)`` (or get one from
/// ``Container/makeTransaction(owner:rank:)`` and ``Container/commit(_:)`` it). Nothing is
/// visible to resolvers until the commit publishes the whole batch as one generation.
/// Managed services of the batch are built and started first, in dependency order; if one
/// fails to start, those already started are stopped and nothing is published.
///
/// ```swift
/// try await container.transaction(owner: "S3Storage") { tx in
///     try tx.register((any ObjectStorage).self, managed: true) { r in
///         try S3Storage(config: config, logger: r.resolve())
///     }
/// }
/// ```
public final class Transaction: Sendable {
    /// Who owns every registration of this transaction: a plugin's manifest name, or `host`.
    public let owner: String
    /// The rank of registrations that do not give their own.
    public let rank: Int
    /// The owner whose providers this transaction's layers wrap (a plugin's manifest
    /// `wraps`), or nil: then ``registerLayer(_:name:managed:mayBeOutranked:factory:)`` is refused
    /// (PlugboardAPI 1.6).
    public let wraps: String?
    /// The plugins the manifest entry of this transaction's owner lists in `requires`, or
    /// nil where no manifest says (a test's or the host's own transaction). A factory of it
    /// may resolve only those, and the one it ``wraps``, by owner
    /// (``Resolver/resolve(_:name:ownedBy:)``): a reload rebuilds a plugin when one of
    /// them changes, and only then (PlugboardAPI 1.6).
    public let requires: [String]?
    let ops = LockedBox<[Op]>([])

    enum Op {
        case add(Registration, replace: Bool)
        case remove(ServiceKey, ServiceType)
        case removeAll
    }

    init(owner: String, rank: Int, wraps: String? = nil, requires: [String]? = nil) {
        self.owner = owner
        self.rank = rank
        self.wraps = wraps
        self.requires = requires
    }

    /// Registers a factory for `service`.
    ///
    /// - Parameters:
    ///   - service: The key type, usually a protocol: `(any ObjectStorage).self`.
    ///   - name: A name to tell several providers of one type apart (`"archive"`), or nil.
    ///   - rank: Higher wins; ties go to the earlier registration. Default: the
    ///     transaction's rank.
    ///   - scope: `.singleton` (default), `.transient` or `.weak`.
    ///   - managed: Build at commit and start it (it must conform to ``ManagedService``)
    ///     before publishing; stop it once it is replaced and drained. Singletons only.
    ///   - implementation: The concrete type, for introspection before the first build.
    ///   - factory: Builds the service; it may resolve other services through the
    ///     ``Resolver`` it is given, and may throw.
    /// - Throws: `container.invalid_registration` for an empty name or a managed
    ///   non-singleton; duplicates are reported at commit.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                            scope: Scope = .singleton, managed: Bool = false,
                            implementation: (any Any.Type)? = nil,
                            factory: @escaping @Sendable (borrowing Resolver) throws -> T) throws(PlugboardError) {
        try add(service, name: name, rank: rank, scope: scope, managed: managed,
                implementation: implementation, factory: FactoryBox(factory), value: nil, replace: false)
    }

    /// Registers a ready value for `service`. `managed` values must conform to
    /// ``ManagedService``.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                            managed: Bool = false, instance: T) throws(PlugboardError) {
        try add(service, name: name, rank: rank, scope: .instance, managed: managed,
                implementation: Swift.type(of: instance as Any), factory: nil, value: ValueBox(instance),
                replace: false)
    }

    /// Like ``register(_:name:rank:scope:managed:implementation:factory:)``, replacing this
    /// owner's registration of the same key if there is one.
    public func replace<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                           scope: Scope = .singleton, managed: Bool = false,
                           implementation: (any Any.Type)? = nil,
                           factory: @escaping @Sendable (borrowing Resolver) throws -> T) throws(PlugboardError) {
        try add(service, name: name, rank: rank, scope: scope, managed: managed,
                implementation: implementation, factory: FactoryBox(factory), value: nil, replace: true)
    }

    /// Like ``register(_:name:rank:managed:instance:)``, replacing this owner's
    /// registration of the same key if there is one.
    public func replace<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                           managed: Bool = false, instance: T) throws(PlugboardError) {
        try add(service, name: name, rank: rank, scope: .instance, managed: managed,
                implementation: Swift.type(of: instance as Any), factory: nil, value: ValueBox(instance),
                replace: true)
    }

    /// Registers a layer: a provider of `service` that wraps the provider of the same key
    /// registered by ``wraps``, the owner named by the plugin's manifest entry
    /// (`"wraps": "Files"`), and stands where that provider stood in the ranking
    /// (PlugboardAPI 1.6).
    ///
    /// The factory is handed that provider as it is *in the generation being built*: at a
    /// hot swap, the new build of the wrapped plugin, or the running one when only the
    /// layer changed; never the previous layer, which a plain resolve of the key would
    /// find. Layers stack: a layer may wrap another layer.
    ///
    /// ```swift
    /// try registrar.registerLayer((any ObjectStorage).self) { _, below in
    ///     QuotaStorage(inner: below, limits: limits)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - service: The key type, usually a protocol: `(any ObjectStorage).self`.
    ///   - name: The name of the provider to wrap, or nil for the unnamed one.
    ///   - managed: Build at commit and start it (it must conform to ``ManagedService``),
    ///     after the provider below has started.
    ///   - mayBeOutranked: False (the default): the commit is refused with
    ///     `container.layer_outranked` when another provider of the key outranks the one
    ///     this layer wraps, since a resolve would then never reach the layer (a quota
    ///     nobody goes through). True for a layer that is also useful below the best
    ///     provider, to consumers that ``Resolver/resolveAll(_:name:)`` the key.
    ///   - factory: Builds the layer from a ``Resolver`` and the provider below.
    /// - Throws: `container.layer_undeclared` when the transaction wraps nobody (the
    ///   manifest entry has no `wraps`), `container.invalid_registration` for an empty
    ///   name; at commit, `container.layer_target_missing` when the wrapped owner has no
    ///   provider of the key, `container.layer_slot_taken` when another layer already
    ///   wraps it, `container.layer_outranked` as `mayBeOutranked` says.
    public func registerLayer<T>(_ service: T.Type, name: String? = nil, managed: Bool = false, mayBeOutranked: Bool = false,
                                 factory: @escaping @Sendable (borrowing Resolver, _ below: T) throws -> T) throws(PlugboardError) {
        let type = ServiceType.of(T.self)
        guard let wraps else {
            let label = name.map { "\(type.displayName) (name \"\($0)\")" } ?? type.displayName
            throw PlugboardError(.layerUndeclared, "\(owner) registered a layer of \(label) but wraps no plugin",
                detail: "A layer wraps the provider of another plugin, named by \"wraps\" in this plugin's manifest entry; the entry \"\(owner)\" has none.",
                hint: "Add \"wraps\": \"<the name of the entry whose \(type.displayName) it wraps>\" to the manifest entry \"\(owner)\", or register with register(...) instead of registerLayer.")
        }
        let key = ServiceKey(T.self, name: name)
        try add(service, name: name, rank: nil, scope: .singleton, managed: managed, implementation: nil,
                factory: FactoryBox { r in
                    let below: T = try r.resolveBelow(key, wrapping: wraps, as: T.self)
                    return try factory(r, below)
                }, value: nil, replace: false, wraps: wraps, mayBeOutranked: mayBeOutranked)
    }

    /// Removes this owner's registration of `service` (under `name`). Committing fails
    /// with `container.not_registered` if there is none.
    public func unregister<T>(_ service: T.Type, name: String? = nil) {
        ops.withLock { $0.append(.remove(ServiceKey(T.self, name: name), .of(T.self))) }
    }

    /// Removes everything this owner has registered.
    public func unregisterAll() {
        ops.withLock { $0.append(.removeAll) }
    }

    private func add<T>(_ service: T.Type, name: String?, rank: Int?, scope: Scope, managed: Bool,
                        implementation: (any Any.Type)?, factory: (any AnyFactoryBox)?,
                        value: ValueBox<T>?, replace: Bool, wraps: String? = nil,
                        mayBeOutranked: Bool = false) throws(PlugboardError) {
        let type = ServiceType.of(T.self)
        if let name, name.isEmpty {
            throw PlugboardError(.invalidRegistration, "empty name for service \(type.displayName)",
                                 detail: "A service name must be a non-empty string, or nil for the unnamed provider.",
                                 hint: "Pass name: nil to register the unnamed provider.")
        }
        if managed && scope != .singleton && scope != .instance {
            throw PlugboardError(.invalidRegistration, "managed service \(type.displayName) must be a singleton",
                                 detail: "It was registered with scope \(scope); a managed service is started once and shared.",
                                 hint: "Register it with scope: .singleton, or without managed: true.")
        }
        if managed, let value, !(value.value is any ManagedService) {
            let found = ServiceType.displayName(of: Swift.type(of: value.value as Any))
            throw PlugboardError(.typeMismatch, "managed service \(type.displayName) does not conform to ManagedService",
                                 detail: "Expected a ManagedService, found \(found).",
                                 hint: "Conform the type to PlugboardAPI.ManagedService, or register it without managed: true.")
        }
        let reg = Registration(key: ServiceKey(T.self, name: name), serviceType: type,
                               rank: rank ?? self.rank, owner: owner, scope: scope, managed: managed,
                               factory: factory, value: value,
                               declaredImplementation: implementation.map { ServiceType(type: $0) }, wraps: wraps,
                               requires: requires, mayBeOutranked: mayBeOutranked)
        ops.withLock { $0.append(.add(reg, replace: replace)) }
    }

    func takeOps() -> [Op] { ops.withLock { ops in defer { ops = [] }; return ops } }
}
