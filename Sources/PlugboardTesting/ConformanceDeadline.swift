import PlugboardConcurrency

/// Runs work with a time limit, without waiting for work that ignores cancellation.
///
/// The work runs in its own task; whichever comes first, its result or the deadline,
/// resumes the caller. On the deadline the work's task is cancelled and left to finish in
/// the background, so one hanging rule cannot hang the whole suite.
enum ConformanceDeadline {
    /// The work's result, or `nil` when the deadline passed (or the caller was cancelled)
    /// first.
    static func run<T: Sendable>(timeout: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        let race = Race<T>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
                race.start(continuation, work: work, timeout: timeout)
            }
        } onCancel: {
            race.finish(nil)
        }
    }

    /// The first of two results wins; the tasks are cancelled once it is in.
    private final class Race<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T?, Never>?
            var finished = false
            var tasks: [Task<Void, Never>] = []
        }

        private let state = LockedValueBox(State())

        func start(_ continuation: CheckedContinuation<T?, Never>,
                   work: @escaping @Sendable () async -> T, timeout: Duration) {
            let alreadyFinished = state.withLock { state in
                state.continuation = continuation
                return state.finished
            }
            if alreadyFinished {
                finish(nil)
                return
            }
            let workTask = Task { self.finish(await work()) }
            let timerTask = Task {
                do {
                    try await Task.sleep(for: timeout)
                    self.finish(nil)
                } catch {
                    // Cancelled: the work finished first.
                }
            }
            let cancelNow = state.withLock { state in
                state.tasks = [workTask, timerTask]
                return state.finished
            }
            if cancelNow {
                workTask.cancel()
                timerTask.cancel()
            }
        }

        func finish(_ result: T?) {
            let (continuation, tasks) = state.withLock { state in
                let continuation = state.continuation
                state.continuation = nil
                if state.finished { return (continuation, [Task<Void, Never>]()) }
                state.finished = true
                return (continuation, state.tasks)
            }
            for task in tasks { task.cancel() }
            continuation?.resume(returning: result)
        }
    }
}
