import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `PREFIX/hosts/<hostID>`: what a live host runs and how it goes, under its lease.
public struct HostStatus: Sendable, Equatable {
    /// How the host's last reload (or its start) ended.
    public struct LastReload: Sendable, Equatable {
        /// `applied`, `unchanged` or `refused`.
        public var outcome: String
        /// The digest it tried to apply.
        public var digest: String
        /// The rollout whose target named it; nil for the stable manifest. A rollout
        /// counts only its own hosts' refusals, not one left from an earlier rollout of
        /// the same manifest.
        public var rollout: String?
        /// Why it was refused.
        public var errorCode: String?
        public var errorMessage: String?
        /// When it ended (ISO 8601).
        public var at: String

        public init(outcome: String, digest: String, rollout: String? = nil, errorCode: String? = nil, errorMessage: String? = nil,
                    at: String) {
            self.outcome = outcome
            self.digest = digest
            self.rollout = rollout
            self.errorCode = errorCode
            self.errorMessage = errorMessage
            self.at = at
        }

        public var refused: Bool { outcome == "refused" }
    }

    public var id: String
    /// The native API's URL.
    public var address: String
    /// plugboard's version.
    public var version: String
    /// The container's generation.
    public var generation: Int64
    /// The digest of the manifest the host runs ("" when it runs none from the fleet).
    public var manifestDigest: String
    public var lastReload: LastReload?
    /// Every required plugin active.
    public var ready: Bool
    /// Object requests answered since the last applied reload, and those with a 5xx status.
    public var requests: Int64
    public var errors: Int64
    /// When those counts started (ISO 8601).
    public var since: String
    /// Where the manifest the host started with came from: `etcd`, `local copy`, `empty`.
    public var startedFrom: String
    public var updatedAt: String

    public init(id: String, address: String, version: String, generation: Int64, manifestDigest: String, lastReload: LastReload?,
                ready: Bool, requests: Int64, errors: Int64, since: String, startedFrom: String, updatedAt: String) {
        self.id = id
        self.address = address
        self.version = version
        self.generation = generation
        self.manifestDigest = manifestDigest
        self.lastReload = lastReload
        self.ready = ready
        self.requests = requests
        self.errors = errors
        self.since = since
        self.startedFrom = startedFrom
        self.updatedAt = updatedAt
    }

    /// Errors over requests since the last reload; 0 without requests.
    public var errorRate: Double { requests > 0 ? Double(errors) / Double(requests) : 0 }

    public var json: JSONOutput {
        let reload: JSONOutput = lastReload.map { r in
            .object([("outcome", .string(r.outcome)), ("digest", .string(r.digest)), ("rollout", .string(r.rollout)),
                     ("error", r.errorCode.map { .object([("code", .string($0)), ("message", .string(r.errorMessage ?? ""))]) } ?? .null),
                     ("at", .string(r.at))])
        } ?? .null
        return .object([("id", .string(id)), ("address", .string(address)), ("version", .string(version)),
                        ("generation", .int(generation)), ("manifestDigest", .string(manifestDigest)), ("lastReload", reload),
                        ("ready", .bool(ready)), ("requests", .int(requests)), ("errors", .int(errors)), ("since", .string(since)),
                        ("startedFrom", .string(startedFrom)), ("updatedAt", .string(updatedAt))])
    }

    public init(bytes: [UInt8], what: String) throws(PlugboardError) {
        let r = try FleetJSON.parse(bytes, what: what)
        var last: LastReload?
        if let l = try r.object("lastReload") {
            let error = try l.object("error")
            last = LastReload(outcome: try l.string("outcome"), digest: try l.string("digest"), rollout: try l.optionalString("rollout"),
                              errorCode: try error?.string("code"), errorMessage: try error?.string("message"), at: try l.string("at"))
        }
        self.init(id: try r.string("id"), address: try r.string("address"), version: try r.string("version"),
                  generation: try r.int("generation"), manifestDigest: try r.string("manifestDigest"), lastReload: last,
                  ready: try r.bool("ready"), requests: try r.int("requests"), errors: try r.int("errors"), since: try r.string("since"),
                  startedFrom: try r.string("startedFrom"), updatedAt: try r.string("updatedAt"))
    }
}
