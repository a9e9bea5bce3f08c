/// The decisions of one rollout, as a value whose events return the action to take
/// (the shape of ReloadStateMachine and NIO's upgraders): no store, no clock, no sockets.
/// ``RolloutController`` feeds it what the store shows and does what it returns.
///
/// A wave is applying until every one of its hosts reports the candidate applied and is
/// ready, then baking for ``Settings/bakeSeconds`` while every host reached so far stays
/// live, ready and on the candidate and the wave's error rate stays within the bound; then
/// the next wave, and after the last, promotion. Any refusal of the candidate, a wave
/// timeout, a lost host or an error-rate breach rolls back every host the rollout reached,
/// and the rollout ends once each of them reports the previous manifest (or is gone), or
/// at the rollback's timeout with the stragglers named.
public struct RolloutStateMachine: Sendable {
    public struct Settings: Sendable, Equatable {
        public var bakeSeconds: Double
        public var maxErrorRate: Double
        public var waveTimeoutSeconds: Double
        /// How long the rolled-back hosts have to report the previous manifest.
        public var rollbackTimeoutSeconds: Double

        public init(bakeSeconds: Double, maxErrorRate: Double, waveTimeoutSeconds: Double, rollbackTimeoutSeconds: Double) {
            self.bakeSeconds = bakeSeconds
            self.maxErrorRate = maxErrorRate
            self.waveTimeoutSeconds = waveTimeoutSeconds
            self.rollbackTimeoutSeconds = rollbackTimeoutSeconds
        }
    }

    public enum Action: Sendable, Equatable {
        /// Nothing to do until the next observation.
        case none
        /// Point these hosts' targets at the candidate (wave numbered from 0).
        case setTargets(wave: Int, hosts: [String])
        /// In one transaction: stable = candidate, and these hosts' targets deleted; then
        /// call ``promoted()``.
        case promote(hosts: [String])
        /// Delete these hosts' targets (they go back to stable), then keep observing.
        case rollBack(hosts: [String], reason: String)
        /// Record the outcome and stop.
        case finish(Outcome)
    }

    public enum Outcome: Sendable, Equatable {
        case succeeded
        case rolledBack(reason: String, stragglers: [String])
        case aborted(reason: String, stragglers: [String])
    }

    private enum State: Sendable {
        case idle
        case applying(wave: Int, since: Double)
        case baking(wave: Int, since: Double)
        case promoting
        case rollingBack(reason: String, aborted: Bool, since: Double)
        case finished(Outcome)
    }

    /// The rollout's id, which its targets carry and hosts report with a refusal.
    public let id: String
    public let candidate: String
    public let previous: String
    public let settings: Settings
    /// The waves' hosts; a host gone before its wave is dropped from it.
    public private(set) var waves: [[String]]
    /// Each wave's state for the record: pending, applying, baking, done, rolled back.
    public private(set) var waveStates: [String]
    /// Hosts whose target points at the candidate.
    public private(set) var targeted: [String] = []
    private var state: State = .idle

    public init(id: String, candidate: String, previous: String, waves: [[String]], settings: Settings) {
        self.id = id
        self.candidate = candidate
        self.previous = previous
        self.waves = waves
        self.settings = settings
        self.waveStates = Array(repeating: "pending", count: waves.count)
    }

    /// The rollout's state for the record: running, rolling back, succeeded, rolled back,
    /// aborted.
    public var phase: String {
        switch state {
        case .idle, .applying, .baking, .promoting: return "running"
        case .rollingBack: return "rolling back"
        case .finished(.succeeded): return "succeeded"
        case .finished(.rolledBack): return "rolled back"
        case .finished(.aborted): return "aborted"
        }
    }

    public var isFinished: Bool { if case .finished = state { return true } else { return false } }

    /// The first wave's targets.
    public mutating func start(now: Double) -> Action {
        guard case .idle = state else { return .none }
        return startWave(0, live: nil, now: now)
    }

    /// What the store shows now: every live host's status, by id.
    public mutating func observed(_ hosts: [String: HostStatus], now: Double) -> Action {
        switch state {
        case .idle, .promoting, .finished:
            return .none
        case .applying(let wave, let since):
            return applying(wave, since: since, hosts, now: now)
        case .baking(let wave, let since):
            return baking(wave, since: since, hosts, now: now)
        case .rollingBack(let reason, let aborted, let since):
            let stragglers = targeted.filter { id in hosts[id].map { $0.manifestDigest != previous } ?? false }
            if stragglers.isEmpty || now - since > settings.rollbackTimeoutSeconds {
                let outcome: Outcome = aborted ? .aborted(reason: reason, stragglers: stragglers)
                                               : .rolledBack(reason: reason, stragglers: stragglers)
                state = .finished(outcome)
                return .finish(outcome)
            }
            return .none
        }
    }

    /// `fleet rollout --abort`: roll back now. Too late once promotion has begun.
    public mutating func abort(reason: String, now: Double) -> Action {
        switch state {
        case .idle, .applying, .baking: return rollBack(reason, aborted: true, now: now)
        case .promoting, .rollingBack, .finished: return .none
        }
    }

    /// The promotion's transaction went through.
    public mutating func promoted() -> Action {
        guard case .promoting = state else { return .none }
        state = .finished(.succeeded)
        return .finish(.succeeded)
    }

    private mutating func startWave(_ index: Int, live: [String: HostStatus]?, now: Double) -> Action {
        var index = index
        while index < waves.count {
            if let live { waves[index] = waves[index].filter { live[$0] != nil } }
            if !waves[index].isEmpty { break }
            waveStates[index] = "done"
            index += 1
        }
        guard index < waves.count else {
            state = .promoting
            return .promote(hosts: targeted)
        }
        waveStates[index] = "applying"
        targeted += waves[index]
        state = .applying(wave: index, since: now)
        return .setTargets(wave: index, hosts: waves[index])
    }

    private mutating func applying(_ wave: Int, since: Double, _ hosts: [String: HostStatus], now: Double) -> Action {
        if let lost = targeted.first(where: { hosts[$0] == nil }) {
            return rollBack("host \"\(lost)\" was lost during wave \(wave + 1): its key under hosts/ vanished", aborted: false, now: now)
        }
        for host in waves[wave] {
            guard let status = hosts[host] else { continue }
            if let reload = status.lastReload, reload.refused, reload.digest == candidate, reload.rollout == id {
                let error = reload.errorCode.map { "\($0): \(reload.errorMessage ?? "")" } ?? "no error given"
                return rollBack("host \"\(host)\" refused the candidate in wave \(wave + 1): \(error)", aborted: false, now: now)
            }
        }
        let waiting = waves[wave].filter { id in hosts[id].map { !($0.manifestDigest == candidate && $0.ready) } ?? true }
        if waiting.isEmpty {
            waveStates[wave] = "baking"
            state = .baking(wave: wave, since: now)
            return baking(wave, since: now, hosts, now: now)
        }
        if now - since > settings.waveTimeoutSeconds {
            let first = waiting[0]
            let found = hosts[first].map { "it reports manifest \(Self.short($0.manifestDigest)), ready \($0.ready)" } ?? "it is gone"
            return rollBack("wave \(wave + 1) timed out after \(Self.seconds(settings.waveTimeoutSeconds)) s: host \"\(first)\" did not report the candidate applied and ready (\(found))"
                            + (waiting.count > 1 ? ", nor did \(waiting.count - 1) more" : ""), aborted: false, now: now)
        }
        return .none
    }

    private mutating func baking(_ wave: Int, since: Double, _ hosts: [String: HostStatus], now: Double) -> Action {
        for id in targeted {
            guard let status = hosts[id] else {
                return rollBack("host \"\(id)\" was lost during wave \(wave + 1): its key under hosts/ vanished", aborted: false, now: now)
            }
            if status.manifestDigest != candidate {
                return rollBack("host \"\(id)\" no longer runs the candidate in wave \(wave + 1): it reports manifest \(Self.short(status.manifestDigest))",
                                aborted: false, now: now)
            }
            if !status.ready {
                return rollBack("host \"\(id)\" is not ready in wave \(wave + 1) (a required plugin is not active)", aborted: false, now: now)
            }
        }
        let statuses = waves[wave].compactMap { hosts[$0] }
        let requests = statuses.reduce(0) { $0 + $1.requests }, errors = statuses.reduce(0) { $0 + $1.errors }
        let rate = requests > 0 ? Double(errors) / Double(requests) : 0
        if rate > settings.maxErrorRate, let worst = statuses.max(by: { $0.errorRate < $1.errorRate }) {
            return rollBack("the error rate of wave \(wave + 1) is \(Self.fraction(rate)), over the bound \(Self.fraction(settings.maxErrorRate)): host \"\(worst.id)\" answered \(worst.errors) of \(worst.requests) object requests with 5xx since it applied the candidate",
                            aborted: false, now: now)
        }
        guard now - since >= settings.bakeSeconds else { return .none }
        waveStates[wave] = "done"
        return startWave(wave + 1, live: hosts, now: now)
    }

    private mutating func rollBack(_ reason: String, aborted: Bool, now: Double) -> Action {
        for i in waveStates.indices where waveStates[i] != "pending" { waveStates[i] = "rolled back" }
        state = .rollingBack(reason: reason, aborted: aborted, since: now)
        return .rollBack(hosts: targeted, reason: reason)
    }

    static func short(_ digest: String) -> String { digest.isEmpty ? "(none)" : String(digest.prefix(12)) }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static func fraction(_ value: Double) -> String {
        let thousandths = Int((value * 1000).rounded())
        let fractional = thousandths % 1000
        let digits = String(fractional)
        return "\(thousandths / 1000).\(String(repeating: "0", count: 3 - digits.count))\(digits)"
    }
}
