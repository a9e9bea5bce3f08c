import Synchronization

/// A live reference to the best provider of a service.
///
/// ``current`` answers from the generation the container has published now: after a
/// swap, the next call returns the new provider, so long-lived consumers hold handles
/// instead of resolved values. While nothing changes it costs one atomic load and an
/// array read more than a plain call: the key's index was computed once, when the handle
/// was made.
///
/// ```swift
/// let storage = container.handle((any ObjectStorage).self)
/// try await storage.current.put(...)
/// ```
public final class ServiceHandle<T>: Sendable {
    let container: Container
    let key: ServiceKey
    let index: Int

    init(container: Container, key: ServiceKey, index: Int) {
        self.container = container
        self.key = key
        self.index = index
    }

    /// The best provider now; throws what ``Container/resolve(_:)`` throws.
    public var current: T {
        get throws(PlugboardError) {
            let ts = ThreadState.current(key: container.threadKey)
            let snap = container.currentSnapshot(ts)
            if let reg = snap._withUnsafeGuaranteedRef({ $0.winner(at: index) }),
               let p = reg._withUnsafeGuaranteedRef({ $0.built.load(ordering: .acquiring) }) {
                return builtValue(p, as: T.self)
            }
            return try ResolutionView(container: container, pinned: snap.takeUnretainedValue())
                .resolve(key, as: T.self, ts: ts, requester: container)
        }
    }
}
