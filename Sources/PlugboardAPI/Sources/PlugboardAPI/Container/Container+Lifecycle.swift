import Synchronization

extension Container {
    /// Stops the managed services whose generation has drained, in reverse start order,
    /// after any stops already under way.
    func scheduleDrainedStops() {
        state.withLock { st in
            st.pruneLeased()
            let ready = st.retired.filter { st.drained(before: $0.generation) }.map(\.registration)
            chainStops(ready, &st)
        }
    }

    /// Takes `ready` out of the retired and running lists and queues their stops, in
    /// reverse start order, after the stops already queued. Called under the lock.
    private func chainStops(_ ready: [Registration], _ st: inout ContainerState) {
        guard !ready.isEmpty else { return }
        st.retired.removeAll { entry in ready.contains { $0 === entry.registration } }
        let order = st.running.filter { r in ready.contains { $0 === r } }
        st.running.removeAll { r in ready.contains { $0 === r } }
        let previous = st.stopChain
        st.stopChain = Task { [self] in
            await previous?.value
            for reg in order.reversed() { await stop(reg) }
        }
    }

    /// Stops one managed service and reports it.
    func stop(_ reg: Registration) async {
        if let service = reg.builtValue as? any ManagedService {
            await service.stop()
        }
        logger.debug("stopped managed service", metadata: ["service": .string(reg.displayName), "owner": .string(reg.owner)])
        state.withLock { st in
            // Only what was published is announced (published generations start at 1): a
            // service rolled back, or withdrawn by its own transaction, was never registered
            // as far as subscribers know.
            guard reg.generation > 0, !st.subscribers.isEmpty else { return }
            st.emit(ContainerEvent(kind: .stopped, registration: st.info(reg), generation: st.generation))
        }
    }

    /// Waits until every stop scheduled so far has finished.
    public func awaitPendingStops() async {
        while true {
            let chain = state.withLock { $0.stopChain }
            guard let chain else { return }
            await chain.value
            let done = state.withLock { st -> Bool in
                guard let now = st.stopChain, now != chain else { st.stopChain = nil; return true }
                return false
            }
            if done { return }
        }
    }

    /// Stops every managed service, in reverse start order, whether or not its
    /// generation has drained, and refuses further changes; then ends every event stream.
    ///
    /// Resolving still works afterwards, but the services it returns have been stopped.
    public func shutdown() async {
        let toStop = state.withLock { st -> [Registration] in
            st.isShutDown = true
            let running = st.running
            st.running = []
            st.retired = []
            return running
        }
        await awaitPendingStops()
        for reg in toStop.reversed() { await stop(reg) }
        // Finish outside the lock: `finish()` runs each stream's `onTermination` on this
        // thread, and that handler takes the lock to remove its subscriber.
        let subscribers = state.withLock { st in
            defer { st.subscribers = [:] }
            return Array(st.subscribers.values)
        }
        for c in subscribers { c.finish() }
    }

    /// Events in the order they happen: `registered`, `replaced`, `unregistering` (before
    /// the old service goes away) and `stopped`. The stream ends at ``shutdown()``.
    public func events() -> AsyncStream<ContainerEvent> {
        let (stream, continuation) = AsyncStream<ContainerEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { st -> UInt64? in
            guard !st.isShutDown else { return nil }
            st.nextSubscriber += 1
            st.subscribers[st.nextSubscriber] = continuation
            return st.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { st in st.subscribers[id] = nil }
        }
        return stream
    }

    /// Every registration, here and not in parents, best first per key, for the CLI and
    /// the admin API.
    public func registrations() -> [RegistrationInfo] {
        state.withLock { st in
            st.current.ranked.flatMap { $0 }.map { st.info($0) }
        }
    }

    /// The registrations of one owner (a plugin), as ``registrations()`` describes them;
    /// only those are described, so asking after each plugin load stays cheap.
    public func registrations(owner: String) -> [RegistrationInfo] {
        state.withLock { st in
            st.current.ranked.flatMap { $0 }.filter { $0.owner == owner }.map { st.info($0) }
        }
    }

    /// Ends one lease on `snapshot`. Only the last lease of a generation that is no longer
    /// current takes the lock, to stop what its end lets drain: a lease on the current
    /// generation holds back no stop (a retirement's generation is never newer).
    func releaseLease(_ snapshot: Snapshot) {
        let left = snapshot.leases.subtract(1, ordering: .sequentiallyConsistent).newValue
        if left == 0 && published.load(ordering: .sequentiallyConsistent) != snapshot.generation {
            scheduleDrainedStops()
        }
    }
}

extension ContainerState {
    func info(_ reg: Registration) -> RegistrationInfo {
        let index = keyIndex[reg.key] ?? -1
        let active = index >= 0 && index < current.ranked.count && current.ranked[index].first === reg
        return RegistrationInfo(
            service: reg.serviceType.displayName, name: reg.key.name, rank: reg.rank, scope: reg.scope,
            owner: reg.owner,
            implementation: (reg.learnedImplementation ?? reg.declaredImplementation)?.displayName,
            generation: reg.generation, isActive: active, isManaged: reg.managed, wraps: reg.wraps)
    }
}

extension Container {
    /// Stops now the managed services retired at or before `generation` (replaced or
    /// unregistered by the change that published it), whether or not every lease on an
    /// older generation has ended: what a drain timeout does. Returns how many were still
    /// waiting, so the caller can report a forced stop; it waits until they have stopped.
    @discardableResult
    public func forceStopRetired(through generation: UInt64) async -> Int {
        let count = state.withLock { st -> Int in
            let ready = st.retired.filter { $0.generation <= generation }.map(\.registration)
            chainStops(ready, &st)
            return ready.count
        }
        await awaitPendingStops()
        return count
    }

    /// How many managed services retired at or before `generation` still wait for their
    /// drain (0 once every one of them has been handed to its stop).
    public func retiredServicesWaiting(through generation: UInt64) -> Int {
        state.withLock { st in st.retired.filter { $0.generation <= generation }.count }
    }

    /// Outstanding leases per generation, for reports.
    public func outstandingLeases() -> [UInt64: Int] {
        state.withLock { $0.openLeases }
    }
}
