import Synchronization

/// Everything a container changes, guarded by its lock (``Container/state``).
struct ContainerState {
    /// The snapshot resolvers read; `Container.published` holds its generation.
    var current: Snapshot
    var generation: UInt64 = 0
    /// Registration order, for ranking ties.
    var sequence: UInt64 = 0
    /// Key indexes are never reused, so handles keep theirs forever.
    var keyIndex: [ServiceKey: Int] = [:]
    var keys: [ServiceKey] = []
    /// Per key index, every registration, best first.
    var ranked: [[Registration]] = []

    /// The generations that may have open leases, oldest first: the current one and each
    /// older one whose count was not zero when last looked at. Few at once (current plus
    /// draining ones), so a drain check walks them instead of hashing generations; the
    /// counts live in the snapshots, so taking and ending a lease takes no lock.
    var leased: [Snapshot]
    /// Managed services running, in start order.
    var running: [Registration] = []
    /// Managed services replaced or unregistered at a generation, waiting for every lease
    /// on an older generation to end before they are stopped.
    var retired: [(generation: UInt64, registration: Registration)] = []
    /// The chain of stop work, so stops run one after another in order.
    var stopChain: Task<Void, Never>?
    var subscribers: [UInt64: AsyncStream<ContainerEvent>.Continuation] = [:]
    var nextSubscriber: UInt64 = 0
    var isShutDown = false

    init() {
        current = Snapshot.empty()
        leased = [current]
    }

    /// The index of `key`, assigned on first sight.
    mutating func index(for key: ServiceKey) -> Int {
        if let i = keyIndex[key] { return i }
        let i = keys.count
        keyIndex[key] = i
        keys.append(key)
        ranked.append([])
        return i
    }

    func emit(_ event: ContainerEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// Whether no lease on a generation older than `generation` is outstanding.
    ///
    /// The counts are read sequentially consistent, as ``Container/lease()`` and
    /// ``Container/releaseLease(_:)`` write them and `Container.published` is stored: a
    /// lease either counted itself before the generation that retired a service was
    /// published (and is seen here) or saw that generation and moved to it.
    func drained(before generation: UInt64) -> Bool {
        !leased.contains { $0.generation < generation && $0.leases.load(ordering: .sequentiallyConsistent) > 0 }
    }

    /// Adds the current snapshot, just published, to `leased` and forgets the older
    /// generations with no lease open. Only after `Container.published` is stored: a lease
    /// counted on an older generation before that store is seen here and kept, and one
    /// counted after it sees that its generation is no longer current and moves on.
    mutating func didPublish() {
        leased.append(current)
        pruneLeased()
    }

    /// Forgets the generations before the current one that have no lease open.
    mutating func pruneLeased() {
        leased.removeAll { $0 !== current && $0.leases.load(ordering: .sequentiallyConsistent) == 0 }
    }

    /// Open leases per generation, leaving out generations with none.
    var openLeases: [UInt64: Int] {
        var out: [UInt64: Int] = [:]
        for snapshot in leased {
            let n = snapshot.leases.load(ordering: .sequentiallyConsistent)
            if n > 0 { out[snapshot.generation] = n }
        }
        return out
    }
}
