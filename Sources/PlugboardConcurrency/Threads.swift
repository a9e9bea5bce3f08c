#if canImport(Glibc)
import Glibc
#endif

/// Plain threads for work that blocks (the server's event loops and its wait for a stop,
/// the tests' waits for children and compilers): a thread that blocks in `epoll_wait`, on
/// a semaphore or on a child must not be one of Swift's cooperative pool (one thread per
/// core), or it would stall every task in the process.
public enum Threads {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts a detached thread running `body`; false when the system refuses one. The
    /// stack is reserved, not committed: only the pages a request touches cost memory.
    public static func spawn(stackBytes: Int = 4 << 20, _ body: @escaping @Sendable () -> Void) -> Bool {
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
}
