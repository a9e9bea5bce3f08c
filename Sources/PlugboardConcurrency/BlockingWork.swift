#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs blocking work (file I/O and its `fsync`, reading and hashing a plugin, `dlopen`)
/// off Swift's cooperative pool, which has one thread per core: work that blocks a pool
/// thread stalls every task queued behind it.
///
/// Each job gets a thread of its own: an idle one if there is one, else a new one, up to
/// ``maxThreads`` (beyond that, jobs wait their turn, first come first served). Threads that stay idle for
/// ``idleSeconds`` end. Not Dispatch: a custom concurrent queue runs on Dispatch's default
/// global threads, at most about one per core, the same threads Swift tasks run on here;
/// and serial lanes put a quick job behind a slow `fsync` on the same lane.
public enum BlockingWork {
    /// Threads at most (4 a core, at least 16); a job beyond them waits for one to be
    /// free. Enough for many waits on the disk or the loader at once, few enough that
    /// hundreds of concurrent writes do not thrash a small machine.
    public static let maxThreads = max(16, 4 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// How long an idle thread waits for a job before it ends.
    public static let idleSeconds = 10

    static let pool = BlockingPool(maxThreads: maxThreads, idleSeconds: idleSeconds)

    /// Runs `body` on a thread of the pool and returns what it returns or throws.
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await handOff(to: pool.submit, body)
    }

    /// Runs `body` on whatever thread `submit` runs its job on, and returns its result to
    /// the awaiting task.
    ///
    /// The result crosses threads through a pthread mutex, not only through the
    /// continuation: ThreadSanitizer cannot see the ordering inside Swift's runtime when a
    /// plain thread resumes a task, and would report what the job wrote as a race.
    public static func handOff<T: Sendable, E: Error>(to submit: (@escaping @Sendable () -> Void) -> Void,
                                                      _ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let handoff = LockedValueBox<Result<T, E>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            submit {
                let outcome = Result { () throws(E) -> T in try body() }
                handoff.withLock { $0 = outcome }
                continuation.resume()
            }
        }
        guard let result = handoff.withLock({ $0 }) else { preconditionFailure("BlockingWork: a job ended without a result") }
        return try result.get()
    }

    /// Threads running or idle now, for tests and reports.
    public static var threadCount: Int { pool.threadCount }
}

/// The threads behind ``BlockingWork``: a queue of jobs under one pthread mutex and
/// condition (visible to ThreadSanitizer, unlike `Synchronization.Mutex`).
final class BlockingPool: @unchecked Sendable {
    // @unchecked Sendable: every stored var is read and written with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [@Sendable () -> Void] = []
    private static let done: @Sendable () -> Void = {}
    private var head = 0
    private var idle = 0
    private var threads = 0
    private let maxThreads: Int
    private let idleSeconds: Int

    init(maxThreads: Int, idleSeconds: Int) {
        self.maxThreads = maxThreads
        self.idleSeconds = idleSeconds
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    var threadCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return threads
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let pending = jobs.count - head
        let spawn = pending > idle && threads < maxThreads
        if spawn { threads += 1 } else { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
        if spawn && !startThread() {
            // No thread to be had: the job waits for a running one.
            pthread_mutex_lock(mutex)
            threads -= 1
            pthread_mutex_unlock(mutex)
        }
    }

    private func startThread() -> Bool {
        // 8 MiB, glibc's usual default: these threads run dlopen and plugin code.
        Threads.spawn(stackBytes: 8 << 20) { self.work() }
    }

    private func work() {
        pthread_mutex_lock(mutex)
        while true {
            if head < jobs.count {
                // The slot lets go of the job (and what it captured: a streamed body's
                // chunk) at once; a queue that never empties must not keep the jobs it ran.
                let job = jobs[head]
                jobs[head] = Self.done
                head += 1
                if head == jobs.count {
                    jobs.removeAll(keepingCapacity: jobs.count <= 64)
                    head = 0
                } else if head > 64 && head * 2 > jobs.count {
                    jobs.removeFirst(head)
                    head = 0
                }
                pthread_mutex_unlock(mutex)
                job()
                pthread_mutex_lock(mutex)
                continue
            }
            idle += 1
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            deadline.tv_sec += idleSeconds
            let rc = pthread_cond_timedwait(condition, mutex, &deadline)
            idle -= 1
            if rc == ETIMEDOUT && head >= jobs.count {
                threads -= 1
                pthread_mutex_unlock(mutex)
                return
            }
        }
    }
}
