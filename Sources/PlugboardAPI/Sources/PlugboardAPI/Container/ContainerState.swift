/// Everything a container changes, guarded by its lock (``Container/state``).
struct ContainerState {
    /// The snapshot resolvers read; `Container.published` holds its generation.
    var current = Snapshot.empty
    var generation: UInt64 = 0
    /// Registration order, for ranking ties.
    var sequence: UInt64 = 0
    /// Key indexes are never reused, so handles keep theirs forever.
    var keyIndex: [ServiceKey: Int] = [:]
    var keys: [ServiceKey] = []
    /// Per key index, every registration, best first.
    var ranked: [[Registration]] = []

    /// Outstanding leases per generation.
    var leases: [UInt64: Int] = [:]
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
    func drained(before generation: UInt64) -> Bool {
        !leases.contains { $0.key < generation && $0.value > 0 }
    }
}
