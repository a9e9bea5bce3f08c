#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Shared by the host, the test kit and the in-tree plugins; PlugboardAPI keeps its own
/// internal copy, since it cannot depend on the root package.
///
/// A value kept together with the lock that protects it, so it cannot be reached without
/// holding the lock (NIO's `NIOLockedValueBox` idea).
///
/// A pthread mutex rather than `Synchronization.Mutex`, which ThreadSanitizer cannot see on
/// this toolchain (docs/ARCHITECTURE.md, fact 13).
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`, and the mutex
/// lives at a fixed heap address for the life of the instance.
public final class LockedValueBox<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a box holding `value`.
    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
