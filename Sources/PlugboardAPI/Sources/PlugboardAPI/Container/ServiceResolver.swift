/// Anything services can be resolved from: a ``Container``, the ``Resolver`` a factory is
/// given, a ``Lease``.
public protocol ServiceResolver: Sendable {
    /// Resolves the best provider of `type` registered under `name` (nil: unnamed).
    func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T
}

extension ServiceResolver {
    /// Resolves the best unnamed provider of `type`; `let s: any ObjectStorage = try r.resolve()`.
    public func resolve<T>(_ type: T.Type = T.self) throws(PlugboardError) -> T {
        try resolve(type, name: nil)
    }
}

/// What a factory resolves its dependencies through.
///
/// Within a lease it reads the lease's generation, and during a transaction's commit it
/// also sees the transaction's own registrations; otherwise it reads the current
/// generation, as the container does. A factory may keep it to resolve lazily later.
public struct Resolver: ServiceResolver {
    let view: ResolutionView

    /// The environment the host runs in.
    public var environment: Environment { view.container.environment }

    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        try view.resolve(ServiceKey(type: ObjectIdentifier(type), name: name), as: type,
                         ts: ThreadState.current(), requester: view.container)
    }

    /// Every provider of `type`, best first.
    public func resolveAll<T>(_ type: T.Type = T.self, name: String? = nil) throws(PlugboardError) -> [T] {
        try view.resolveAll(ServiceKey(type: ObjectIdentifier(type), name: name), as: type, ts: ThreadState.current())
    }
}

extension Container {
    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        guard let name else { return try resolve(type) }
        return try ResolutionView(container: self, pinned: nil)
            .resolve(ServiceKey(type: ObjectIdentifier(type), name: name), as: type,
                     ts: ThreadState.current(key: threadKey), requester: self)
    }
}
