/// Resolves a dependency lazily, and live, from a given container.
///
/// ```swift
/// final class Uploader {
///     @Injected(from: container) var storage: (any ObjectStorage)?
/// }
/// ```
/// The property is optional because reading it must not trap: it is nil when the service
/// cannot be resolved (nothing provides it, or its factory failed), and
/// `$storage.resolve()` throws the reason. Each read returns the
/// current provider (it is backed by a ``ServiceHandle``), so a swap reaches it at once.
/// Prefer constructor injection; use this where the object is not built by a factory.
@propertyWrapper
public struct Injected<T>: Sendable {
    private let handle: ServiceHandle<T>

    public init(_ type: T.Type = T.self, name: String? = nil, from container: Container) {
        handle = container.handle(type, name: name)
    }

    public var wrappedValue: T? { try? handle.current }

    /// The wrapper itself, for ``resolve()``.
    public var projectedValue: Injected<T> { self }

    /// The current provider, or the error that says why there is none.
    public func resolve() throws(PlugboardError) -> T { try handle.current }
}

/// Hands out dependencies by inferred type, view-model style.
///
/// ```swift
/// struct UploadModel {
///     let storage: any ObjectStorage
///     init(_ injector: Injector) throws { storage = try injector.dependency() }
/// }
/// ```
public struct Injector: Sendable {
    private let resolver: any ServiceResolver

    public init(_ resolver: any ServiceResolver) { self.resolver = resolver }

    /// The best provider of the inferred type (under `name`).
    public func dependency<T>(_ name: String? = nil) throws(PlugboardError) -> T {
        try resolver.resolve(T.self, name: name)
    }
}
