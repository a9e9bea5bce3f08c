#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Plain threads for blocking socket work: blocking calls on Swift's cooperative pool
/// (one thread per core) would stall every task in the process.
enum Threads {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts a detached thread running `body`; false when the system refuses one. The
    /// stack is reserved, not committed: only the pages a request touches cost memory.
    static func spawn(stackBytes: Int = 4 << 20, _ body: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, stackBytes)
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, { raw in
            guard let raw else { return nil }
            Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        return true
    }

    /// Runs `operation` to completion from a plain thread and returns its result. It starts
    /// right here (`Task.immediate`), so an operation that never suspends (an in-memory
    /// lookup) costs no thread hop; one that does suspend finishes on the pool while this
    /// thread waits.
    static func runBlocking<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T? {
        let box = ResultBox<T>()
        Task.immediate {
            box.value = await operation()
            box.done.signal()
        }
        box.done.wait()
        // The semaphore orders the write before this read: never nil in practice.
        return box.value
    }

    private final class ResultBox<T>: @unchecked Sendable {
        // @unchecked Sendable: `value` is written once by the task, before `done.signal()`,
        // and read after `done.wait()`.
        var value: T?
        let done = DispatchSemaphore(value: 0)
    }
}

/// Monotonic time in seconds.
enum Clock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
