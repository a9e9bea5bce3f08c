#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: there is no way to reach it without the lock.
/// (Not `Synchronization.Mutex`, which ThreadSanitizer misreads; DESIGN.md fact 13.)
final class PThreadLock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched inside `withLock`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
