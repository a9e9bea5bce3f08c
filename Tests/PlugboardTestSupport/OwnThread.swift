#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (a compiler, a child process waited for) on a thread of its own.
///
/// Not on Swift's cooperative pool, which has one thread per core (two in CI): a test
/// that blocks one of them for a build makes every other test's timers and continuations
/// late by as long, and CI failed on such waits. Not on `DispatchQueue.global()` either:
/// on Linux its threads are as few, and a build waited for there held one for 90 s.
public enum OwnThread {
    /// Runs `body` on a new detached thread and returns its result to the awaiting task.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let job = Job { continuation.resume(returning: body()) }
            let context = Unmanaged.passRetained(job).toOpaque()
            var attributes = pthread_attr_t()
            pthread_attr_init(&attributes)
            defer { pthread_attr_destroy(&attributes) }
            pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
            var thread = pthread_t()
            let rc = pthread_create(&thread, &attributes, { raw in
                guard let raw else { return nil }
                Unmanaged<Job>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            }, context)
            if rc != 0 {
                // No thread to be had (a test process at its limit): the work runs here
                // rather than never.
                Unmanaged<Job>.fromOpaque(context).takeRetainedValue().body()
            }
        }
    }

    private final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
