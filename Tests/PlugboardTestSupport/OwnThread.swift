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

extension OwnThread {
    /// Work already running on a thread of its own, whose result is awaited later.
    public final class Started<T: Sendable>: Sendable {
        private enum Slot { case waiting, result(T), awaited(CheckedContinuation<T, Never>) }
        private let slot = LockedValueBox<Slot>(.waiting)

        fileprivate func finish(_ result: T) {
            let waiter: CheckedContinuation<T, Never>? = slot.withLock { slot in
                if case .awaited(let continuation) = slot { return continuation }
                slot = .result(result)
                return nil
            }
            waiter?.resume(returning: result)
        }

        /// What the work returned, once it has.
        public var value: T {
            get async {
                await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
                    let ready: T? = slot.withLock { slot in
                        if case .result(let result) = slot { return result }
                        slot = .awaited(continuation)
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
        }
    }

    /// Starts `body` on a new thread now, before this call returns.
    ///
    /// Unlike `Task { await OwnThread.run { ... } }`, whose thread starts only once the
    /// task gets one of the cooperative pool's two threads: a test that waits for the
    /// work to reach a state (a reader asleep, a writer waiting) failed in a loaded full
    /// run because the work had not begun after 30 s.
    public static func start<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Started<T> {
        let started = Started<T>()
        let job: @Sendable () -> Void = { started.finish(body()) }
        if !Threads.spawn(job) { job() }
        return started
    }
}
