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
    // The fields the hot path reads come first, in one cache line.
    let container: Container
    let index: Int
    let key: ServiceKey

    init(container: Container, key: ServiceKey, index: Int) {
        self.container = container
        self.index = index
        self.key = key
    }

    /// The best provider now; throws what ``Container/resolve(_:)`` throws.
    ///
    /// Inlinable, as ``Container/resolve(_:)`` is; part of the plugin ABI.
    @inlinable
    public var current: T {
        get throws(PlugboardError) {
            var registration: UnsafeRawPointer?
            var factory: UnsafeRawPointer?
            if let p = _builtValue(registration: &registration, transientFactory: &factory) {
                return p.assumingMemoryBound(to: T.self).pointee
            }
            if let factory, let registration {
                return try _makeTransient(factory: factory, registration: registration)
            }
            return try _current(registration: registration)
        }
    }

    /// The built value of the best provider now, or nil and that provider (unretained),
    /// as ``Container/_builtValue(ofType:registration:)``. One call from the inlined
    /// ``current``, which cannot read this class's fields without calling their getters.
    @usableFromInline
    func _builtValue(registration: inout UnsafeRawPointer?, transientFactory: inout UnsafeRawPointer?) -> UnsafeRawPointer? {
        container.lookupBuilt(atIndex: index, registration: &registration, transientFactory: &transientFactory)
    }

    /// Builds the transient provider that ``_builtValue(registration:transientFactory:)`` found.
    @usableFromInline
    func _makeTransient(factory: UnsafeRawPointer, registration: UnsafeRawPointer) throws(PlugboardError) -> T {
        try container._makeTransient(T.self, factory: factory, registration: registration)
    }

    /// The rest of ``current``: build the provider, or look in the parents and report a miss.
    @usableFromInline
    func _current(registration: UnsafeRawPointer?) throws(PlugboardError) -> T {
        let ts = ThreadState.current(key: container.threadKey)
        if let registration {
            let reg = Unmanaged<Registration>.fromOpaque(registration).takeUnretainedValue()
            return try container.build(reg, as: T.self, ts: ts, view: ResolutionView(container: container, pinned: nil))
        }
        return try ResolutionView(container: container, pinned: nil).resolve(key, as: T.self, ts: ts, requester: container)
    }
}
