/// A built value of the service type `T`, shared by every resolve of a singleton or an
/// instance registration.
///
/// The value lives in its own allocation so that the resolve path can read it through a
/// plain pointer (`Registration.built`) as a `T`, without asking the runtime for
/// `ValueBox<T>`'s metadata to find a field. That read is sound because a registration
/// under the key `ObjectIdentifier(T.self)` is only ever created by `register<T>` with a
/// `ValueBox<T>`: the key *is* the static type, never a metatype value (``ServiceKey``).
///
/// `@unchecked Sendable`: the value is immutable after `init`. Whether `T` itself may be
/// used from many threads is the service's contract (see ``Container``).
final class ValueBox<T>: AnyValueBox, @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>

    init(_ value: T) {
        // A cache line of its own: the value is read by every resolve on every thread,
        // and must not share a line with something written often (the service object's
        // reference count, which malloc may place right beside a small allocation).
        let size = max(MemoryLayout<T>.size, 64)
        pointer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: max(MemoryLayout<T>.alignment, 64))
            .bindMemory(to: T.self, capacity: 1)
        pointer.initialize(to: value)
    }

    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }

    var value: T { pointer.pointee }
    var anyValue: Any { pointer.pointee }
    var rawPointer: UnsafeRawPointer { UnsafeRawPointer(pointer) }
}

/// What code that does not know `T` needs of a ``ValueBox``.
protocol AnyValueBox: AnyObject, Sendable {
    var anyValue: Any { get }
    /// Where the value is; read it as the `T` of the registration's key.
    var rawPointer: UnsafeRawPointer { get }
}

/// Reads the value a registration's `built` pointer points at.
@inline(__always)
func builtValue<T>(_ p: UnsafeRawPointer, as type: T.Type) -> T {
    p.assumingMemoryBound(to: T.self).pointee
}

/// A factory for the service type `T`.
final class FactoryBox<T>: AnyFactoryBox, @unchecked Sendable {
    let make: @Sendable (borrowing Resolver) throws -> T
    init(_ make: @escaping @Sendable (borrowing Resolver) throws -> T) { self.make = make }

    func makeErased(_ resolver: borrowing Resolver) throws -> any AnyValueBox {
        ValueBox(try make(resolver))
    }

    /// Calls the factory with a resolver on `container`. A method, so that the closure is
    /// called through its guaranteed `self` without copying (and retaining) it.
    @inline(__always)
    func make(resolvingIn container: Container) throws -> T {
        try make(Resolver(container: container, pinned: nil))
    }
}

/// What code that does not know `T` needs of a ``FactoryBox``: building a managed
/// singleton before its transaction is published.
protocol AnyFactoryBox: AnyObject, Sendable {
    func makeErased(_ resolver: borrowing Resolver) throws -> any AnyValueBox
}

/// The weak reference of a weak-scoped registration.
final class WeakReference {
    weak var object: AnyObject?
}
