import PlugboardConcurrency

/// Runs blocking work (a compiler, a child process waited for) on a thread of its own.
///
/// Not on Swift's cooperative pool, which has one thread per core (two in CI): a test
/// that blocks one of them for a build makes every other test's timers and continuations
/// late by as long, and CI failed on such waits. Not on `DispatchQueue.global()` either:
/// on Linux its threads are as few, and a build waited for there held one for 90 s.
public enum OwnThread {
    /// Runs `body` on a new detached thread (``Threads``) and returns its result to the
    /// awaiting task, through ``BlockingWork``'s hand-off, which ThreadSanitizer can see.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await BlockingWork.handOff(to: { job in
            // No thread to be had (a test process at its limit): the work runs here
            // rather than never.
            if !Threads.spawn(job) { job() }
        }, body)
    }
}
