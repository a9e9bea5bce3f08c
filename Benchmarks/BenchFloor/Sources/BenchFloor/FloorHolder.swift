/// The service protocol the container benchmark resolves, and the floor calls.
///
/// Both live in this library-evolution module, so a `ping()` costs the same (a call through
/// this module's dispatch thunk) whether the reference came from the container or from the
/// floor's holder.
public protocol BenchService: AnyObject, Sendable {
    func ping() -> Int
}

/// Registered as `.transient`: every resolve builds a new object.
public protocol TransientService: AnyObject, Sendable {
    func ping() -> Int
}

/// Never registered: the `miss` case resolves it.
public protocol MissingService: AnyObject, Sendable {
    func ping() -> Int
}

/// The service the writer thread replaces every millisecond in the two-thread cases; the
/// readers never resolve it.
public protocol ReplacedService: AnyObject, Sendable {
    func ping() -> Int
}

/// The floor of a resolve: a call into another module that returns a stored reference.
///
/// `get()` is public and not inlinable, in a module built with library evolution, so the
/// caller cannot see through it: it pays the call and the retain of the returned
/// reference (and the release after using it), exactly as a resolve does at best.
public final class FloorHolder: Sendable {
    private let service: any BenchService

    public init(_ service: any BenchService) {
        self.service = service
    }

    /// The stored reference, +1.
    @inline(never)
    public func get() -> any BenchService {
        service
    }
}
