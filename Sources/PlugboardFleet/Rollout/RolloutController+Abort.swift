import PlugboardAPI
import PlugboardHost

extension RolloutController {
    /// `fleet rollout --abort`: asks the running rollout's controller to roll back, and
    /// waits (at most `timeoutSeconds`) for its record to end. A rollout whose controller
    /// is gone (its lock's lease ended, the record never finished) is ended here: its
    /// targets deleted, its record marked aborted.
    ///
    /// - Throws: `fleet.no_rollout` when none runs; `fleet.store_failed`.
    public static func abort(store: any FleetStore, keys: FleetKeys, by: String, timeoutSeconds: Double,
                             clock: @escaping @Sendable () -> Double) async throws(PlugboardError) -> RolloutRecord {
        let raw = try await store.get(keys.rolloutCurrent)
        let current = try raw.map { b throws(PlugboardError) in try RolloutRecord(bytes: b, what: "rollout/current") }
        guard let raw, let current, !current.finished else {
            throw PlugboardError(.fleetNoRollout, "no rollout is running",
                detail: current.map { "The last one, \"\($0.id)\", ended \($0.state) at \($0.endedAt ?? "?")." } ?? "The fleet has had no rollout.",
                hint: "plugboard fleet status shows the fleet and its last rollout.")
        }
        if try await store.get(keys.rolloutLock) != nil {
            try await store.put(keys.rolloutAbort, Array(current.id.utf8), lease: nil)
            let wakeups = FleetWakeups(store: store, prefixes: [keys.rolloutCurrent], tickSeconds: 0.25)
            defer { wakeups.stop() }
            let deadline = clock() + timeoutSeconds
            for await _ in wakeups.stream {
                if let bytes = try await store.get(keys.rolloutCurrent) {
                    let record = try RolloutRecord(bytes: bytes, what: "rollout/current")
                    if record.id == current.id && record.finished { return record }
                }
                if clock() > deadline { break }
            }
            throw PlugboardError(.fleetStoreFailed, "rollout \"\(current.id)\" did not end within \(RolloutStateMachine.seconds(timeoutSeconds)) s of the abort",
                detail: "Its controller holds the lock but has not recorded the rollback's end.",
                hint: "Run plugboard fleet status; if the controller is stuck, stop it, and abort again once its lock is gone.")
        }
        // Its controller is gone: nobody else will end it.
        var record = current
        let ended = try await store.transaction(when: [.absent(keys.rolloutLock), .equals(keys.rolloutCurrent, raw)],
                                                then: current.hosts.map { .delete(keys.target($0)) })
        guard ended else { return try await abort(store: store, keys: keys, by: by, timeoutSeconds: timeoutSeconds, clock: clock) }
        record.state = "aborted"
        record.reason = "aborted by \(by) after its controller was gone"
        record.waves = record.waves.map { .init(hosts: $0.hosts, state: $0.state == "pending" ? "pending" : "rolled back") }
        record.endedAt = Timestamp.now().iso8601
        _ = try await store.transaction(when: [], then: [.put(keys.rolloutCurrent, record.json.bytes, lease: nil),
                                                         .put(keys.rolloutHistory(record.id), record.json.bytes, lease: nil)])
        return record
    }
}
