#if canImport(Glibc)
import Glibc
#endif

/// At most `limit` holders at once; the others wait suspended, holding no thread.
///
/// The CLI tests' children are waited for on threads of their own (``OwnThread``), so
/// nothing bounded how many ran: all ~130 started together on two cores, and every other
/// test in the process (in-memory ones too) waited 36 s for the CPU. While they blocked
/// the pool, its two threads were the bound; this keeps that bound without blocking it.
public final class AsyncLimit: @unchecked Sendable {
    // @unchecked Sendable: `available` and `waiters` are only touched with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    public init(_ limit: Int) {
        available = max(1, limit)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    /// One per core: what the machine can run at once.
    public static func perCore() -> AsyncLimit {
        AsyncLimit(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// Runs `body` once a place is free, and frees it after.
    public func run<T: Sendable>(_ body: () async -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            pthread_mutex_lock(mutex)
            if available > 0 {
                available -= 1
                pthread_mutex_unlock(mutex)
                continuation.resume()
            } else {
                waiters.append(continuation)
                pthread_mutex_unlock(mutex)
            }
        }
        defer { release() }
        return await body()
    }

    private func release() {
        pthread_mutex_lock(mutex)
        if waiters.isEmpty {
            available += 1
            pthread_mutex_unlock(mutex)
        } else {
            // The place goes straight to the longest waiter.
            let next = waiters.removeFirst()
            pthread_mutex_unlock(mutex)
            next.resume()
        }
    }
}
