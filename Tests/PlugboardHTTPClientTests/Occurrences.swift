import Dispatch
import Glibc

/// Counts something that happens on another thread and lets a test wait until it has
/// happened often enough: a pthread mutex and condition variable, which ThreadSanitizer
/// sees (docs/ARCHITECTURE.md, fact 13), rather than a sleep that hopes it has.
///
/// `@unchecked Sendable`: `count` is only read or written with the mutex held, and both
/// pthread objects live at fixed heap addresses for the life of the instance.
final class Occurrences: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var count = 0

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a wall-clock step must not shorten a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// How many times it has happened.
    var value: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count
    }

    /// It happened once more: wakes every waiter.
    func signal() {
        pthread_mutex_lock(mutex)
        count += 1
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks the calling thread until it has happened `expected` times or `seconds` have
    /// passed; whether it has.
    func waitBlocking(for expected: Int, seconds: Int = 30) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += seconds
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count < expected {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        return count >= expected
    }

    /// ``waitBlocking(for:seconds:)`` on a thread of its own, so that no thread of the concurrency
    /// pool (two on this machine) is blocked. The answer is read again under the mutex,
    /// not passed through the continuation, for ThreadSanitizer's sake.
    func wait(for expected: Int, seconds: Int = 30) async -> Bool {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue(label: "occurrences-wait").async {
                _ = self.waitBlocking(for: expected, seconds: seconds)
                done.resume()
            }
        }
        return value >= expected
    }
}
