import Synchronization

/// A container read through one pinned snapshot: the engine of every resolve that does
/// more than return an already built value.
///
/// Parents of an overlay are read at their current generation.
struct ResolutionView: @unchecked Sendable {
    // @unchecked Sendable: both fields are Sendable classes; the struct is immutable.
    let container: Container
    /// The generation to read; nil for whatever is current at each lookup (plain resolves),
    /// set for leases and for a transaction's staged registrations.
    let pinned: Snapshot?

    func snapshot(_ ts: UnsafeMutablePointer<ThreadState>) -> Snapshot {
        pinned ?? container.currentSnapshot(ts)
    }

    /// The winning registration for `key` and the view of the container that owns it.
    func lookup(_ key: ServiceKey, ts: UnsafeMutablePointer<ThreadState>) -> (Registration, ResolutionView)? {
        let snap = snapshot(ts)
        if let reg = snap.winner(at: snap.index(of: key)) { return (reg, self) }
        guard let parent = container.parent else { return nil }
        return ResolutionView(container: parent, pinned: nil).lookup(key, ts: ts)
    }

    func resolve<T>(_ key: ServiceKey, as type: T.Type, ts: UnsafeMutablePointer<ThreadState>,
                    requester: Container) throws(PlugboardError) -> T {
        guard let (reg, owner) = lookup(key, ts: ts) else {
            throw Container.notRegistered(key, type: type, from: requester)
        }
        if let p = reg.built { return builtValue(p, as: T.self) }
        return try container.build(reg, as: type, ts: ts, view: reg.scope == .transient ? self : owner)
    }

    func resolveAll<T>(_ key: ServiceKey, as type: T.Type,
                       ts: UnsafeMutablePointer<ThreadState>) throws(PlugboardError) -> [T] {
        var out: [T] = []
        var seenOwners = Set<String>()
        var view: ResolutionView? = self
        // An overlay's providers come first; a parent's provider from an owner the overlay
        // also registered for this key is shadowed by it.
        while let v = view {
            let snap = v.snapshot(ts)
            let index = snap.index(of: key)
            let regs = index >= 0 ? snap.ranked[index] : []
            for reg in regs where !seenOwners.contains(reg.owner) {
                if let p = reg.built {
                    out.append(builtValue(p, as: T.self))
                } else {
                    out.append(try v.container.build(reg, as: type, ts: ts,
                                                     view: reg.scope == .transient ? self : v))
                }
            }
            seenOwners.formUnion(regs.map(\.owner))
            view = v.container.parent.map { ResolutionView(container: $0, pinned: nil) }
        }
        return out
    }
}

extension Container {
    /// Builds (or, for a weak scope, revives) the value of `reg`, a registration this
    /// container's view found. Runs user code: everything it uses is retained.
    @inline(never)
    func build<T>(_ reg: Registration, as type: T.Type, ts: UnsafeMutablePointer<ThreadState>,
                  view: ResolutionView) throws(PlugboardError) -> T {
        switch reg.scope.kind {
        case .transient:
            guard let factory = reg.factory else { break }
            let typed = unsafeDowncast(factory, to: FactoryBox<T>.self)
            return try runFactory(reg, ts: ts, view: view) { r in try typed.make(r) }
        case .weak:
            if let alive = reg.weakCell?.withLock({ $0.object }) {
                return try cast(alive, to: type, reg: reg)
            }
            guard let factory = reg.factory else { break }
            let typed = unsafeDowncast(factory, to: FactoryBox<T>.self)
            let value = try runFactory(reg, ts: ts, view: view) { r in try typed.make(r) }
            let object = value as AnyObject
            guard Swift.type(of: value as Any) is AnyClass else {
                let found = ServiceType.displayName(of: Swift.type(of: value as Any))
                throw PlugboardError(.invalidRegistration,
                    "weak-scoped service \(reg.displayName) built a value type",
                    detail: "The factory returned a \(found), which is not a class instance, so nothing can hold it weakly.",
                    hint: "Register it as .singleton or .transient, or return a class instance.")
            }
            // Two threads may both build; the first stored wins and both return it.
            let kept: AnyObject = reg.weakCell?.withLock { cell -> AnyObject in
                if let existing = cell.object { return existing }
                cell.object = object
                return object
            } ?? object
            return try cast(kept, to: type, reg: reg)
        case .singleton, .instance:
            guard let factory = reg.factory else { break }
            let typed = unsafeDowncast(factory, to: FactoryBox<T>.self)
            try ensureBuilt(reg, ts: ts, view: view) { r in ValueBox(try typed.make(r)) }
        }
        guard let p = reg.built else {
            throw PlugboardError(.factoryFailed, "singleton \(reg.displayName) was not built",
                                 hint: "Retry the resolve; the thread that was building it failed.")
        }
        return builtValue(p, as: T.self)
    }

    /// Builds the singleton `reg` exactly once: the first thread to claim it runs `make`,
    /// others wait for it (or get the cycle that waiting would deadlock on).
    func ensureBuilt(_ reg: Registration, ts: UnsafeMutablePointer<ThreadState>, view: ResolutionView,
                     make: (borrowing Resolver) throws -> any AnyValueBox) throws(PlugboardError) {
        if reg.built != nil { return }
        if let path = ts.pointee.cyclePath(to: reg) { throw Self.cycleError(path) }
        switch BuildCoordinator.shared.claim(reg, me: ts.pointee.token) {
        case .built:
            return
        case .cycle(let path):
            throw Self.cycleError(path)
        case .build:
            do {
                let box = try runFactory(reg, ts: ts, view: view, make)
                reg.publish(box)
                BuildCoordinator.shared.finish(reg)
                let type = Swift.type(of: box.anyValue)
                // Under the lock of the container that owns `reg` (the view's), which is
                // not `self` when an overlay builds its parent's singleton.
                view.container.state.withLock { _ in reg.learnedImplementation = ServiceType(type: type) }
                ts.pointee.completed?.append(reg)
            } catch {
                BuildCoordinator.shared.finish(reg)
                throw error
            }
        }
    }

    /// Runs a factory of `reg` with this thread's build stack updated, turning what it
    /// throws into `container.factory_failed` (cycles and depth errors pass through as
    /// they are, so their path reaches the caller unchanged).
    func runFactory<R>(_ reg: Registration, ts: UnsafeMutablePointer<ThreadState>, view: ResolutionView,
                       _ make: (borrowing Resolver) throws -> R) throws(PlugboardError) -> R {
        try ts.pointee.enter(Unmanaged.passUnretained(reg))
        defer { ts.pointee.leave() }
        do {
            return try make(Resolver(view: view))
        } catch {
            throw Self.factoryError(error, reg)
        }
    }

    /// What a factory threw, as `container.factory_failed`; cycles, depth errors and a
    /// resolve by owner the manifest does not allow pass through as they are, so their
    /// path (or the manifest fix) reaches the caller unchanged.
    static func factoryError(_ error: any Error, _ reg: Registration) -> PlugboardError {
        if let e = error as? PlugboardError,
           e.code == .circularDependency || e.code == .resolutionTooDeep || e.code == .ownerNotRequired {
            return e
        }
        let service = reg.displayName
        return PlugboardError(.factoryFailed, underlying: error) {
            let cause = PlugboardError.cause(error)
            return .init(message: "factory of \(service) failed",
                         detail: cause.detail,
                         hint: cause.hint.map { $0 + " The next resolve calls the factory again." }
                            ?? "Fix the cause above; the next resolve calls the factory again.")
        }
    }

    private func cast<T>(_ object: AnyObject, to type: T.Type, reg: Registration) throws(PlugboardError) -> T {
        if let value = object as? T { return value }
        let found = ServiceType.displayName(of: Swift.type(of: object))
        throw PlugboardError(.typeMismatch,
            "service \(reg.displayName) holds a \(found), not a \(ServiceType.displayName(of: type))",
            detail: "Expected \(ServiceType.displayName(of: type)), found \(found).",
            hint: "A plugin has probably linked its own copy of PlugboardAPI or copied a protocol instead of importing it.")
    }

    static func cycleError(_ path: [Registration]) -> PlugboardError {
        let names = path.map(\.displayName)
        // A factory resolving its own key finds itself, and so would a handle to that key:
        // what it wants is the provider below, which only a layer is given.
        let ownKey = path.count > 1 && path.allSatisfy { $0.key == path[0].key }
        return PlugboardError(.circularDependency,
            "circular dependency: \(names.joined(separator: " -> "))",
            detail: ownKey
                ? "The factory of \(names[0]) (plugin \"\(path[0].owner)\") resolves \(names[0]) itself, and the best provider of it is that factory's own registration."
                : "Resolving \(names.first ?? "the service") needs itself through the services listed.",
            hint: ownKey
                ? "To wrap the provider below, add \"wraps\": \"<the plugin that provides it>\" to the manifest entry \"\(path[0].owner)\" and register with registerLayer, whose factory is given that provider (PlugboardAPI 1.6); a ServiceHandle of the same service would find the wrapper again."
                : "Break the cycle: inject a ServiceHandle or resolve lazily instead of in the factory.")
    }
}
