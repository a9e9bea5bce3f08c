/// A built value of the service type `T`, shared by every resolve of a singleton or an
/// instance registration.
///
/// The resolve path casts a registration's box back with `unsafeDowncast`, which is sound
/// because a registration under the key `ObjectIdentifier(T.self)` is only ever created by
/// `register<T>` with a `ValueBox<T>`: the key *is* the type.
///
/// `@unchecked Sendable`: `value` is immutable. Whether `T` itself may be used from many
/// threads is the service's contract (see ``Container``).
final class ValueBox<T>: AnyValueBox, @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
    var anyValue: Any { value }
}

/// What code that does not know `T` needs of a ``ValueBox``.
protocol AnyValueBox: AnyObject, Sendable {
    var anyValue: Any { get }
}

/// A factory for the service type `T`.
final class FactoryBox<T>: AnyFactoryBox, @unchecked Sendable {
    let make: @Sendable (Resolver) throws -> T
    init(_ make: @escaping @Sendable (Resolver) throws -> T) { self.make = make }

    func makeErased(_ resolver: Resolver) throws -> any AnyValueBox {
        ValueBox(try make(resolver))
    }
}

/// What code that does not know `T` needs of a ``FactoryBox``: building a managed
/// singleton before its transaction is published.
protocol AnyFactoryBox: AnyObject, Sendable {
    func makeErased(_ resolver: Resolver) throws -> any AnyValueBox
}

/// The weak reference of a weak-scoped registration.
final class WeakReference {
    weak var object: AnyObject?
}
