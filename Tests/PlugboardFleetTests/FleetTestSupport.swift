import PlugboardHost
import PlugboardFleet
import PlugboardJSON

/// Host statuses as the rollout sees them, for the tests.
enum Hosts {
    static let candidate = String(repeating: "c", count: 64)
    static let previous = String(repeating: "p", count: 64)

    /// A live host on `digest`, ready, whose last reload applied it.
    static func on(_ id: String, _ digest: String, ready: Bool = true, requests: Int64 = 0, errors: Int64 = 0) -> HostStatus {
        HostStatus(id: id, address: "http://127.0.0.1:1", version: "0.1.0", generation: 2, manifestDigest: digest,
                   lastReload: .init(outcome: "applied", digest: digest, at: "2026-12-03T00:00:00.000Z"), ready: ready,
                   requests: requests, errors: errors, since: "2026-12-03T00:00:00.000Z", startedFrom: "etcd", updatedAt: "")
    }

    /// A live host still on `running` that refused `digest`.
    static func refused(_ id: String, _ digest: String, running: String, rollout: String = "r1", code: String = "reload.preflight_failed",
                        message: String = "plugin \"Bad\" crashed in its preflight (signal 11)") -> HostStatus {
        var status = on(id, running)
        status.lastReload = .init(outcome: "refused", digest: digest, rollout: rollout, errorCode: code, errorMessage: message, at: "2026-12-03T00:00:01.000Z")
        return status
    }

    static func all(_ statuses: [HostStatus]) -> [String: HostStatus] {
        Dictionary(uniqueKeysWithValues: statuses.map { ($0.id, $0) })
    }
}

extension JSONOutput {
    /// A record's bytes as plugboard stores them (compact JSON).
    var recordBytes: [UInt8] { Array(render(pretty: false).utf8) }
}
