/// Runs reloads one at a time: a reload asked for while one runs waits as the one
/// pending reload (later requests join it, so a burst gives one more run, of the final
/// state); file events are debounced first.
actor ReloadQueue {
    typealias Perform = @Sendable (String) async -> ReloadOutcome

    private var running = false
    private var pending: (trigger: String, waiters: [CheckedContinuation<ReloadOutcome, Never>])?
    private var debounce: Task<Void, Never>?

    /// Runs a reload now, or after the one running; returns its outcome.
    func run(trigger: String, perform: @escaping Perform) async -> ReloadOutcome {
        if running {
            return await withCheckedContinuation { continuation in
                if pending == nil {
                    pending = (trigger, [continuation])
                } else {
                    pending?.waiters.append(continuation)
                }
            }
        }
        running = true
        let outcome = await perform(trigger)
        // The caller gets its own outcome now; the pending reload runs on its own.
        if pending != nil {
            Task { await self.runPending(perform) }
        } else {
            running = false
        }
        return outcome
    }

    private func runPending(_ perform: @escaping Perform) async {
        while let next = pending {
            pending = nil
            let outcome = await perform(next.trigger)
            for waiter in next.waiters { waiter.resume(returning: outcome) }
        }
        running = false
    }

    /// A file changed: reload once no event has come for `milliseconds`.
    func changed(debounceMilliseconds milliseconds: Int, perform: @escaping Perform) {
        debounce?.cancel()
        debounce = Task {
            if milliseconds > 0 {
                try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
            }
            guard !Task.isCancelled else { return }
            // In a task of its own: a later event cancels this debounce task, and that
            // must not cancel a reload already under way (plugins' start may honour it).
            Task { _ = await self.run(trigger: "watch", perform: perform) }
        }
    }
}
