#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A pthread mutex with a condition variable.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer cannot see that one's futex and reports
/// races inside it (docs/ARCHITECTURE.md, fact 13); a pthread mutex is visible to it.
///
/// `@unchecked Sendable`: the pthread objects live at fixed heap addresses for the life of
/// the instance and are only touched through the pthread API, which is thread-safe.
final class PThreadMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    /// Where the condition starts in the one block that holds both: one allocation, not
    /// two (a lock is made for every request's lease and body).
    private static let condOffset = {
        let alignment = MemoryLayout<pthread_cond_t>.alignment
        return (MemoryLayout<pthread_mutex_t>.stride + alignment - 1) / alignment * alignment
    }()

    init() {
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: Self.condOffset + MemoryLayout<pthread_cond_t>.stride,
            alignment: max(MemoryLayout<pthread_mutex_t>.alignment, MemoryLayout<pthread_cond_t>.alignment))
        mutex = block.bindMemory(to: pthread_mutex_t.self, capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        cond = (block + Self.condOffset).bindMemory(to: pthread_cond_t.self, capacity: 1)
        cond.initialize(to: pthread_cond_t())
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        UnsafeMutableRawPointer(mutex).deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for ``broadcast()``; the mutex must be held.
    func wait() { pthread_cond_wait(cond, mutex) }
    func broadcast() { pthread_cond_broadcast(cond) }

    @inline(__always)
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value kept together with the lock that protects it (NIO's `NIOLockedValueBox` idea):
/// there is no way to reach the value without holding the lock.
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`.
final class LockedBox<Value>: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private var value: Value

    init(_ value: Value) { self.value = value }

    @inline(__always)
    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }
}
