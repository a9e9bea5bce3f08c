import Synchronization

extension Container {
    /// A new, empty transaction by `owner`; apply it with ``commit(_:)``.
    public func makeTransaction(owner: String = "host", rank: Int = 0) -> Transaction {
        Transaction(owner: owner, rank: rank)
    }

    /// A new, empty transaction by `owner` whose layers wrap the providers of `wraps`
    /// (``Transaction/registerLayer(_:name:managed:mayBeOutranked:factory:)``) and whose factories may
    /// resolve by owner the plugins of `requires` (``Transaction/requires``; PlugboardAPI 1.6).
    public func makeTransaction(owner: String, rank: Int, wraps: String?, requires: [String]?) -> Transaction {
        Transaction(owner: owner, rank: rank, wraps: wraps, requires: requires)
    }

    /// Runs `body` to fill a transaction and commits it: all of it becomes visible at
    /// once, or, if `body` throws or the commit fails, none of it.
    public func transaction<R>(owner: String = "host", rank: Int = 0,
                               _ body: (Transaction) throws -> R) async throws -> R {
        let tx = makeTransaction(owner: owner, rank: rank)
        let result = try body(tx)
        try await commit(tx)
        return result
    }

    /// Applies a transaction: builds and starts its managed services in dependency order
    /// against the staged registrations, then publishes everything as one generation.
    ///
    /// - Throws: `container.duplicate_registration`, `container.not_registered` (removing
    ///   what the owner did not register), `container.start_failed` (the services already
    ///   started are stopped again), `container.transaction_conflict`, `container.shut_down`.
    public func commit(_ tx: Transaction) async throws(PlugboardError) {
        try await commit([tx], verify: false)
    }

    /// Applies several transactions, of several owners, as ONE generation: a hot swap's
    /// removals of old plugins and registrations of new ones become visible together, so
    /// no resolver ever sees the old storage gone and the new one not there yet.
    ///
    /// They apply in order, each with its own owner, as if committed one after another.
    /// With `verify`, every singleton they add is built before anything is published
    /// (a factory that fails is found now, not at the first request), and every new
    /// service that adopts ``HealthChecking`` is checked after the managed services have
    /// started; any failure stops what was started and publishes nothing.
    ///
    /// - Throws: as ``commit(_:)-(Transaction)``, and `container.health_check_failed`,
    ///   `container.factory_failed` (with `verify`).
    public func commit(_ transactions: [Transaction], verify: Bool) async throws(PlugboardError) {
        let batches = transactions.map { Batch(ops: $0.takeOps(), owner: $0.owner) }
        let owners = transactions.map(\.owner).joined(separator: ", ")
        var started: [Registration] = []
        let hasManaged = batches.contains { $0.ops.contains { if case .add(let r, _) = $0 { return r.managed } else { return false } } }
        if hasManaged || verify {
            started = try await startManaged(batches, verify: verify)
        }
        do {
            try publish(batches, started: started)
        } catch {
            for reg in started.reversed() { await stop(reg) }
            guard !started.isEmpty, error.code != .shutDown else { throw error }
            // It applied to the registrations its services were started against; a change
            // committed meanwhile made it invalid.
            throw PlugboardError(.transactionConflict, underlying: error) {
                .init(message: "transaction of \"\(owners)\" conflicts with a change committed while its services were starting",
                      detail: "Applying it to the current registrations failed: \(error.code): \(error.message). Its managed services were stopped again and nothing was published.",
                      hint: "Retry the transaction.")
            }
        }
        scheduleDrainedStops()
    }

    /// Registers a factory, owned by `owner`, as a transaction of its own.
    ///
    /// Managed services need ``transaction(owner:rank:_:)``, which can start them.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int = 0, owner: String = "host",
                            scope: Scope = .singleton, implementation: (any Any.Type)? = nil,
                            factory: @escaping @Sendable (borrowing Resolver) throws -> T) throws(PlugboardError) {
        let tx = makeTransaction(owner: owner, rank: rank)
        try tx.register(service, name: name, scope: scope, implementation: implementation, factory: factory)
        try publishNow(tx)
    }

    /// Registers a ready value, owned by `owner`, as a transaction of its own.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int = 0, owner: String = "host",
                            instance: T) throws(PlugboardError) {
        let tx = makeTransaction(owner: owner, rank: rank)
        try tx.register(service, name: name, instance: instance)
        try publishNow(tx)
    }

    /// Replaces `owner`'s factory for the key (or registers it if there is none).
    public func replace<T>(_ service: T.Type, name: String? = nil, rank: Int = 0, owner: String = "host",
                           scope: Scope = .singleton, implementation: (any Any.Type)? = nil,
                           factory: @escaping @Sendable (borrowing Resolver) throws -> T) throws(PlugboardError) {
        let tx = makeTransaction(owner: owner, rank: rank)
        try tx.replace(service, name: name, scope: scope, implementation: implementation, factory: factory)
        try publishNow(tx)
    }

    /// Replaces `owner`'s value for the key (or registers it if there is none).
    public func replace<T>(_ service: T.Type, name: String? = nil, rank: Int = 0, owner: String = "host",
                           instance: T) throws(PlugboardError) {
        let tx = makeTransaction(owner: owner, rank: rank)
        try tx.replace(service, name: name, instance: instance)
        try publishNow(tx)
    }

    /// Removes `owner`'s registration of `service` (under `name`).
    public func unregister<T>(_ service: T.Type, name: String? = nil, owner: String = "host") throws(PlugboardError) {
        let tx = makeTransaction(owner: owner)
        tx.unregister(service, name: name)
        try publishNow(tx)
    }

    /// Removes everything `owner` registered, in one generation; returns how many.
    @discardableResult
    public func unregisterAll(owner: String) -> Int {
        let tx = makeTransaction(owner: owner)
        tx.unregisterAll()
        let removed = (try? publish([Batch(ops: tx.takeOps(), owner: owner)], started: [])) ?? 0
        scheduleDrainedStops()
        return removed
    }

    private func publishNow(_ tx: Transaction) throws(PlugboardError) {
        try publish([Batch(ops: tx.takeOps(), owner: tx.owner)], started: [])
        scheduleDrainedStops()
    }

    /// Applies `ops` to the current registrations and publishes them as one generation,
    /// with events in OSGi's order: `unregistering` before the old service goes away,
    /// then `registered` / `replaced`. Returns how many registrations were removed.
    @discardableResult
    func publish(_ batches: [Batch], started: [Registration]) throws(PlugboardError) -> Int {
        try state.withLock { (st: inout ContainerState) throws(PlugboardError) -> Int in
            guard !st.isShutDown else { throw Self.shutDownError() }
            let changes = try st.apply(batches)
            st.running += started
            // Started services that their own transaction withdrew were never visible:
            // nothing can hold them, so they stop without waiting for a drain.
            for reg in changes.discarded where st.running.contains(where: { $0 === reg }) {
                st.retired.append((0, reg))
            }
            guard !changes.added.isEmpty || !changes.removed.isEmpty else { return 0 }
            let next = st.generation + 1
            // Events carry display names, which cost a demangling each: only for listeners.
            let notify = !st.subscribers.isEmpty
            for (old, _) in changes.removed where notify {
                st.emit(ContainerEvent(kind: .unregistering, registration: st.info(old), generation: next))
            }
            st.generation = next
            for reg in changes.added { reg.generation = next }
            st.current = st.makeSnapshot(generation: next)
            // Sequentially consistent, as leases count themselves (ContainerState.drained).
            published.store(next, ordering: .sequentiallyConsistent)
            st.didPublish()
            let replacements = Set(changes.removed.compactMap { $0.replacement.map(ObjectIdentifier.init) })
            for reg in changes.added where notify {
                let kind: ContainerEvent.Kind = replacements.contains(ObjectIdentifier(reg)) ? .replaced : .registered
                st.emit(ContainerEvent(kind: kind, registration: st.info(reg), generation: next))
            }
            for (old, _) in changes.removed where st.running.contains(where: { $0 === old }) {
                st.retired.append((next, old))
            }
            return changes.removed.count
        }
    }

    /// Builds the managed singletons of `batches` against the staged registrations and
    /// starts them, dependencies first; with `verify`, also builds every other singleton
    /// they add and runs the health checks. On failure, stops what it started and throws.
    private func startManaged(_ batches: [Batch], verify: Bool) async throws(PlugboardError) -> [Registration] {
        let (staged, added) = try state.withLock { (st: inout ContainerState) throws(PlugboardError) -> (Snapshot, [Registration]) in
            guard !st.isShutDown else { throw Self.shutDownError() }
            var copy = st
            let changes = try copy.apply(batches)
            return (copy.makeSnapshot(generation: st.generation), changes.added)
        }
        // Every managed registration of the batches, even one a later op withdraws (it is
        // started and stopped again, as a commit of it alone would).
        let managed = batches.flatMap { $0.ops.compactMap { op -> Registration? in
            if case .add(let r, _) = op, r.managed { return r } else { return nil }
        } }
        let order = try buildInDependencyOrder(verify ? managed + added.filter { !$0.managed && $0.scope == .singleton } : managed,
                                               staged: staged).filter(\.managed)
        var started: [Registration] = []
        for reg in order {
            guard let service = reg.builtValue as? any ManagedService else {
                for s in started.reversed() { await stop(s) }
                let found = reg.builtValue.map { ServiceType.displayName(of: Swift.type(of: $0)) } ?? "nothing"
                throw PlugboardError(.typeMismatch, "managed service \(reg.displayName) does not conform to ManagedService",
                                     detail: "Expected a ManagedService, found \(found).",
                                     hint: "Conform the type to PlugboardAPI.ManagedService, or register it without managed: true.")
            }
            do {
                try await service.start()
                started.append(reg)
            } catch {
                for s in started.reversed() { await stop(s) }
                let name = reg.displayName
                throw PlugboardError(.startFailed, underlying: error) {
                    let cause = PlugboardError.cause(error)
                    return .init(message: "managed service \(name) failed to start",
                                 detail: cause.detail + " The services of its transaction started before it were stopped, and nothing was published.",
                                 hint: cause.hint.map { $0 + " Then load the plugin again." } ?? "Fix the cause and load the plugin again.")
                }
            }
        }
        guard verify else { return started }
        for reg in added {
            guard let checked = reg.builtValue as? any HealthChecking else { continue }
            do {
                try await checked.healthCheck()
            } catch {
                for s in started.reversed() { await stop(s) }
                let name = reg.displayName
                let owner = reg.owner
                throw PlugboardError(.healthCheckFailed, underlying: error) {
                    .init(message: "health check of \(name) (plugin \"\(owner)\") failed: \(Self.describe(error))",
                          detail: "The new service was built and its managed services started, but healthCheck() threw. They were stopped again and nothing was published.",
                          hint: "Fix what the check reports (configuration, credentials, the server it reaches), then reload.")
                }
            }
        }
        return started
    }

    /// What an error says, for a message: a PlugboardError's own message, else its text.
    static func describe(_ error: any Error) -> String {
        (error as? PlugboardError).map { "\($0.code): \($0.message)" } ?? String(describing: error)
    }

    /// Builds each managed singleton (and whatever it depends on) on this thread, and
    /// returns them in the order their builds completed: dependencies first.
    private func buildInDependencyOrder(_ managed: [Registration], staged: Snapshot) throws(PlugboardError) -> [Registration] {
        let ts = ThreadState.current()
        let outer = ts.pointee.completed
        ts.pointee.completed = []
        defer { ts.pointee.completed = outer }
        let view = ResolutionView(container: self, pinned: staged)
        for reg in managed {
            if let value = reg.built {
                _ = value
                ts.pointee.completed?.append(reg)
                continue
            }
            guard let factory = reg.factory else { continue }
            try ensureBuilt(reg, ts: ts, view: view) { r in try factory.makeErased(r) }
        }
        let completed = ts.pointee.completed ?? []
        let wanted = Set(managed.map(ObjectIdentifier.init))
        var seen = Set<ObjectIdentifier>()
        return completed.filter { wanted.contains(ObjectIdentifier($0)) && seen.insert(ObjectIdentifier($0)).inserted }
    }

    static func shutDownError() -> PlugboardError {
        PlugboardError(.shutDown, "container is shut down",
                       detail: "The container stopped its services and takes no more changes.",
                       hint: "Make changes before shutdown, or create a new container.")
    }
}
