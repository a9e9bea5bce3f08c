import PlugboardAPI
import PlugboardConcurrency
import PlugboardHost

/// `fleet rollout`: takes the rollout lock, then does what ``RolloutStateMachine``
/// decides from what the store shows (docs/FLEET.md, "Rollouts"), keeping the rollout's
/// record up to date, until it ends; `fleet rollout --abort` asks it to stop.
public struct RolloutController: Sendable {
    public struct Configuration: Sendable {
        public var keys: FleetKeys
        public var waves: WavePlan
        public var settings: RolloutStateMachine.Settings
        /// Who runs it (user@hostname), for the records.
        public var by: String
        /// The lock's lease: a controller that dies frees the lock after this long.
        public var leaseTTLSeconds: Int = 10
        /// How often the hosts are read again without a change (time-based decisions).
        public var tickSeconds: Double = 0.25
        public var logger: Logger

        public init(keys: FleetKeys, waves: WavePlan, settings: RolloutStateMachine.Settings, by: String, logger: Logger = .disabled) {
            self.keys = keys
            self.waves = waves
            self.settings = settings
            self.by = by
            self.logger = logger
        }
    }

    public let store: any FleetStore
    public let configuration: Configuration
    /// Seconds on a monotonic clock; tests may give their own.
    public let clock: @Sendable () -> Double

    public init(store: any FleetStore, configuration: Configuration, clock: @escaping @Sendable () -> Double = { MonotonicClock.now() }) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
    }

    /// Rolls `manifest` out; returns the finished record, or nil when it is already the
    /// stable manifest. `progress` gets one line per step (a wave's targets set, its hosts
    /// applied, baked, a rollback and its reason).
    ///
    /// - Throws: the manifest's errors (`manifest.*`); `fleet.nothing_to_roll_out` without
    ///   a stable manifest or live hosts; `fleet.rollout_in_progress` naming the rollout
    ///   that holds the lock; `fleet.store_failed` before the lock is taken.
    public func run(manifest bytes: [UInt8], source: String,
                    progress: @escaping @Sendable (String) -> Void = { _ in }) async throws(PlugboardError) -> RolloutRecord? {
        let keys = configuration.keys
        let candidate = try await FleetManifests.store(bytes, source: source, in: store, keys: keys)
        guard let stable = try await FleetManifests.stable(in: store, keys: keys) else {
            throw PlugboardError(.fleetNothingToRollOut, "the fleet has no stable manifest to roll back to",
                detail: "\(keys.stable) does not exist.", hint: "Set the first manifest with plugboard fleet set MANIFEST --fleet URL.")
        }
        if stable.digest == candidate { return nil }
        let live = try await FleetManifests.hosts(in: store, keys: keys)
        guard !live.isEmpty else {
            throw PlugboardError(.fleetNothingToRollOut, "the fleet has no live host to roll out to",
                detail: "Nothing is registered under \(keys.hosts).",
                hint: "Start hosts with plugboard serve --fleet URL, or set the manifest with plugboard fleet set.")
        }
        let startedAt = Timestamp.now().iso8601
        let id = "r" + startedAt.filter { $0.isNumber } .prefix(14) + "-" + candidate.prefix(8)
        let waves = configuration.waves.waves(Array(live.keys))
        var machine = RolloutStateMachine(id: id, candidate: candidate, previous: stable.digest, waves: waves, settings: configuration.settings)
        let lease = try await store.grantLease(ttlSeconds: configuration.leaseTTLSeconds)
        let lock = RolloutLock(id: id, candidate: candidate, startedAt: startedAt, by: configuration.by)
        var record = RolloutRecord(id: id, candidate: candidate, previous: stable.digest, startedAt: startedAt, by: configuration.by,
                                   wavesSpec: configuration.waves.text, bakeSeconds: configuration.settings.bakeSeconds,
                                   maxErrorRate: configuration.settings.maxErrorRate,
                                   waveTimeoutSeconds: configuration.settings.waveTimeoutSeconds,
                                   waves: waves.map { .init(hosts: $0, state: "pending") }, state: "running")
        let locked = try await store.transaction(when: [.absent(keys.rolloutLock)], then: [
            .put(keys.rolloutLock, lock.json.bytes, lease: lease), .put(keys.rolloutCurrent, record.json.bytes, lease: nil),
            .delete(keys.rolloutAbort)])
        guard locked else {
            try? await store.revokeLease(lease)
            guard let held = try await store.get(keys.rolloutLock) else {
                return try await run(manifest: bytes, source: source, progress: progress)
            }
            throw try RolloutLock(bytes: held).refusal("rollout of manifest \(candidate.prefix(12))")
        }
        progress("rollout \(id): manifest \(candidate.prefix(12)) over \(live.count) host(s) in \(waves.count) wave(s), from \(stable.digest.prefix(12))")
        let keepAlive = Task { [store, ttl = configuration.leaseTTLSeconds, logger = configuration.logger] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(Double(ttl) / 3 * 1e9))
                do throws(PlugboardError) {
                    if try await !store.keepAlive(lease) { logger.error("the rollout lock's lease ended; another rollout may start") }
                } catch {
                    if !Task.isCancelled { logger.warning("could not renew the rollout lock's lease: \(error.message)") }
                }
            }
        }
        defer { keepAlive.cancel() }
        let wakeups = FleetWakeups(store: store, prefixes: [keys.hosts, keys.rolloutAbort], tickSeconds: configuration.tickSeconds)
        defer { wakeups.stop() }
        var action = machine.start(now: clock())
        var wakes = wakeups.stream.makeAsyncIterator()
        var storeDown = false
        var abortSeen = false
        while true {
            do throws(PlugboardError) {
                switch action {
                case .none:
                    guard await wakes.next() != nil else { return record }
                    if !abortSeen, try await store.get(keys.rolloutAbort).map({ String(decoding: $0, as: UTF8.self) }) == id {
                        abortSeen = true
                        action = machine.abort(reason: "aborted by plugboard fleet rollout --abort", now: clock())
                    } else {
                        action = machine.observed(try await FleetManifests.hosts(in: store, keys: keys), now: clock())
                    }
                case .setTargets(let wave, let hosts):
                    let target = TargetRecord(digest: candidate, rollout: id).json.bytes
                    for host in hosts { try await store.put(keys.target(host), target, lease: nil) }
                    progress("wave \(wave + 1)/\(machine.waves.count): \(hosts.joined(separator: ", ")) -> \(candidate.prefix(12))")
                    action = .none
                case .rollBack(let hosts, let reason):
                    for host in hosts { try await store.delete(keys.target(host)) }
                    progress("rolling back \(hosts.joined(separator: ", ")) to \(stable.digest.prefix(12)): \(reason)")
                    action = .none
                case .promote(let hosts):
                    let promoted = StableRecord(digest: candidate, setAt: Timestamp.now().iso8601, by: "rollout \(id)")
                    _ = try await store.transaction(when: [], then: [.put(keys.stable, promoted.json.bytes, lease: nil)]
                                                        + hosts.map { .delete(keys.target($0)) })
                    progress("every wave applied: \(candidate.prefix(12)) is the stable manifest")
                    action = machine.promoted()
                case .finish(let outcome):
                    record.waves = zip(machine.waves, machine.waveStates).map { .init(hosts: $0, state: $1) }
                    record.state = machine.phase
                    record.endedAt = Timestamp.now().iso8601
                    switch outcome {
                    case .succeeded: break
                    case .rolledBack(let reason, let stragglers), .aborted(let reason, let stragglers):
                        record.reason = reason
                        record.stragglers = stragglers
                    }
                    _ = try await store.transaction(when: [], then: [
                        .put(keys.rolloutCurrent, record.json.bytes, lease: nil), .put(keys.rolloutHistory(id), record.json.bytes, lease: nil),
                        .delete(keys.rolloutAbort), .delete(keys.rolloutLock)])
                    try? await store.revokeLease(lease)
                    return record
                }
                if storeDown {
                    storeDown = false
                    progress("the fleet's store answers again")
                }
                let now = RolloutRecord.Wave.list(machine)
                if now != record.waves || machine.phase != record.state {
                    for (i, wave) in now.enumerated() where wave.state == "baking" && record.waves[i].state != "baking" {
                        progress("wave \(i + 1)/\(now.count): every host applied it and is ready; baking \(RolloutStateMachine.seconds(configuration.settings.bakeSeconds)) s")
                    }
                    record.waves = now
                    record.state = machine.phase
                    try await store.put(keys.rolloutCurrent, record.json.bytes, lease: nil)
                }
            } catch {
                // The same action is tried again at the next wake-up: etcd losing its
                // leader, or a member, costs a retry, not the rollout.
                if !storeDown {
                    storeDown = true
                    progress("could not reach the fleet's store (\(error.message)); retrying")
                }
                if action == .none { continue }
                guard await wakes.next() != nil else { return record }
            }
        }
    }
}

extension RolloutRecord.Wave {
    static func list(_ machine: RolloutStateMachine) -> [RolloutRecord.Wave] {
        zip(machine.waves, machine.waveStates).map { .init(hosts: $0, state: $1) }
    }
}
