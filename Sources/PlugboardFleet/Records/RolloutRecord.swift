import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `PREFIX/rollout/current` and `PREFIX/rollout/history/<id>`: one rollout, as it goes
/// and as it ended.
public struct RolloutRecord: Sendable, Equatable {
    /// One wave: its hosts (new in this wave) and how far it got.
    public struct Wave: Sendable, Equatable {
        public var hosts: [String]
        /// `pending`, `applying`, `baking`, `done` or `rolled back`.
        public var state: String

        public init(hosts: [String], state: String) {
            self.hosts = hosts
            self.state = state
        }
    }

    public var id: String
    public var candidate: String
    public var previous: String
    public var startedAt: String
    /// Who ran it (user@hostname).
    public var by: String
    /// The settings it ran with, as given (`1,50%,100%`, seconds, the bound).
    public var wavesSpec: String
    public var bakeSeconds: Double
    public var maxErrorRate: Double
    public var waveTimeoutSeconds: Double
    public var waves: [Wave]
    /// `running`, `rolling back`, `succeeded`, `rolled back` or `aborted`.
    public var state: String
    /// Why it rolled back: which host, what failed.
    public var reason: String?
    /// Hosts that had not reported the previous manifest when the rollback's wait ended.
    public var stragglers: [String]
    public var endedAt: String?

    public init(id: String, candidate: String, previous: String, startedAt: String, by: String, wavesSpec: String,
                bakeSeconds: Double, maxErrorRate: Double, waveTimeoutSeconds: Double, waves: [Wave], state: String,
                reason: String? = nil, stragglers: [String] = [], endedAt: String? = nil) {
        self.id = id
        self.candidate = candidate
        self.previous = previous
        self.startedAt = startedAt
        self.by = by
        self.wavesSpec = wavesSpec
        self.bakeSeconds = bakeSeconds
        self.maxErrorRate = maxErrorRate
        self.waveTimeoutSeconds = waveTimeoutSeconds
        self.waves = waves
        self.state = state
        self.reason = reason
        self.stragglers = stragglers
        self.endedAt = endedAt
    }

    /// True once it ended, whichever way.
    public var finished: Bool { endedAt != nil }

    /// Every host the rollout planned, in wave order.
    public var hosts: [String] { waves.flatMap(\.hosts) }

    public var json: JSONOutput {
        .object([("id", .string(id)), ("candidate", .string(candidate)), ("previous", .string(previous)),
                 ("startedAt", .string(startedAt)), ("by", .string(by)), ("waves", .array(waves.map {
                     .object([("hosts", .array($0.hosts.map { .string($0) })), ("state", .string($0.state))])
                 })), ("settings", .object([("waves", .string(wavesSpec)), ("bakeSeconds", .double(bakeSeconds)),
                                            ("maxErrorRate", .double(maxErrorRate)), ("waveTimeoutSeconds", .double(waveTimeoutSeconds))])),
                 ("state", .string(state)), ("reason", .string(reason)), ("stragglers", .array(stragglers.map { .string($0) })),
                 ("endedAt", .string(endedAt))])
    }

    public init(bytes: [UInt8], what: String) throws(PlugboardError) {
        let r = try FleetJSON.parse(bytes, what: what)
        var waves: [Wave] = []
        for w in try r.array("waves") { waves.append(Wave(hosts: try w.strings("hosts"), state: try w.string("state"))) }
        guard let settings = try r.object("settings") else { throw FleetJSON.invalid(what, "member \"settings\" is missing") }
        self.init(id: try r.string("id"), candidate: try r.string("candidate"), previous: try r.string("previous"),
                  startedAt: try r.string("startedAt"), by: try r.string("by"), wavesSpec: try settings.string("waves"),
                  bakeSeconds: try settings.double("bakeSeconds"), maxErrorRate: try settings.double("maxErrorRate"),
                  waveTimeoutSeconds: try settings.double("waveTimeoutSeconds"), waves: waves, state: try r.string("state"),
                  reason: try r.optionalString("reason"), stragglers: try r.strings("stragglers"), endedAt: try r.optionalString("endedAt"))
    }
}
