import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardTestSupport
import Testing

/// `fleet status` whatever the records hold, and what it says of a rollout whose
/// controller is gone.
@Suite struct FleetStatusTests {
    let keys = FleetKeys(prefix: "/t")

    func fleet(hosts: [String] = ["h1", "h2"]) async throws -> (InMemoryFleetStore, StableRecord) {
        let store = InMemoryFleetStore()
        let stable = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a", by: "t", in: store, keys: keys)
        let lease = try await store.grantLease(ttlSeconds: 10)
        for id in hosts { try await store.put(keys.host(id), Hosts.on(id, stable.digest).json.recordBytes, lease: lease) }
        return (store, stable)
    }

    /// Garbage, an empty object, and a value beyond the 1 MiB a record may hold.
    enum BadStable: String, CaseIterable {
        case garbage, emptyObject, oversized

        var bytes: [UInt8] {
            switch self {
            case .garbage: Array("garbage".utf8)
            case .emptyObject: Array("{}".utf8)
            case .oversized: Array(repeating: 0x20, count: 1_468_006)
            }
        }
    }

    @Test(arguments: BadStable.allCases) func aBadStableRecord_isNamed_andEveryHostListed(_ value: BadStable) async throws {
        let (store, _) = try await fleet()
        try await store.put(keys.stable, value.bytes, lease: nil)
        let status = try await FleetStatus.read(from: store, keys: keys)
        #expect(status.hosts.map(\.status.id) == ["h1", "h2"])
        #expect(status.stable == nil)
        #expect(status.badRecords.map(\.key) == ["stable"])
        #expect(status.badRecords.first?.error.code == .fleetRecordInvalid)
        // Named, not quoted: a 1.4 MiB value does not come back in the message.
        #expect((status.badRecords.first?.error.message.utf8.count ?? 0) < 1_000)
    }

    @Test func badHostTargetAndRolloutRecords_areNamed_andTheRestShown() async throws {
        let (store, stable) = try await fleet()
        try await store.put(keys.host("h3"), Array("{\"id\": 3}".utf8), lease: nil)
        try await store.put(keys.target("h2"), Array("[]".utf8), lease: nil)
        try await store.put(keys.rolloutCurrent, Array("{".utf8), lease: nil)
        let status = try await FleetStatus.read(from: store, keys: keys)
        #expect(status.hosts.map(\.status.id) == ["h1", "h2"])
        #expect(status.stable == stable)
        #expect(status.badRecords.map(\.key) == ["hosts/h3", "rollout/current", "targets/h2"])
        #expect(status.rollout == nil)
    }

    func record(_ id: String, candidate: String, previous: String, hosts: [String]) -> RolloutRecord {
        RolloutRecord(id: id, candidate: candidate, previous: previous, startedAt: "t", by: "me", wavesSpec: "1,100%", bakeSeconds: 600,
                      maxErrorRate: 0.01, waveTimeoutSeconds: 120, waves: [.init(hosts: hosts, state: "baking")], state: "running")
    }

    @Test func aRunningRolloutWithoutItsLock_isOrphaned_andItsHostLags() async throws {
        let (store, stable) = try await fleet()
        let candidate = try await FleetManifests.store(Manifests.bytes("B"), source: "b", in: store, keys: keys)
        try await store.put(keys.rolloutCurrent, record("r1", candidate: candidate, previous: stable.digest, hosts: ["h1"]).json.recordBytes, lease: nil)
        try await store.put(keys.target("h1"), TargetRecord(digest: candidate, rollout: "r1").json.recordBytes, lease: nil)
        try await store.put(keys.host("h1"), Hosts.on("h1", candidate).json.recordBytes, lease: nil)

        // The controller holds the lock: a live rollout, its host on its target as asked.
        let lease = try await store.grantLease(ttlSeconds: 10)
        try await store.put(keys.rolloutLock, RolloutLock(id: "r1", candidate: candidate, startedAt: "t", by: "me").json.recordBytes, lease: lease)
        let live = try await FleetStatus.read(from: store, keys: keys)
        #expect(!live.rolloutOrphaned)
        #expect(live.hosts.first?.lagging == false)
        #expect(live.hosts.first?.desired == candidate)

        // Its lease lapsed: the rollout is orphaned, and h1 sits on a target nobody moves.
        store.expire(lease)
        let orphaned = try await FleetStatus.read(from: store, keys: keys)
        #expect(orphaned.rolloutOrphaned)
        let h1 = try #require(orphaned.hosts.first)
        #expect(h1.lagging)
        #expect(h1.orphanedTarget?.rollout == "r1")
        #expect(h1.desired == stable.digest)
        #expect(orphaned.hosts.last?.lagging == false)
    }

    @Test func fleetSet_isRefused_whileAHostSitsOnAnOrphanedTarget() async throws {
        let (store, stable) = try await fleet()
        let candidate = try await FleetManifests.store(Manifests.bytes("B"), source: "b", in: store, keys: keys)
        try await store.put(keys.target("h1"), TargetRecord(digest: candidate, rollout: "r1").json.recordBytes, lease: nil)
        do {
            _ = try await FleetManifests.setStable(Manifests.bytes("C"), source: "c", by: "t", in: store, keys: keys)
            Issue.record("fleet set went on beside an orphaned target")
        } catch {
            #expect(error.code == .fleetRolloutOrphaned)
            #expect(error.message.contains("r1"))
            #expect(error.detail?.contains("\"h1\"") == true)
            #expect(error.hint?.contains("--abort") == true)
        }
        #expect(try await FleetManifests.stable(in: store, keys: keys) == stable)
        #expect(try await store.get(keys.manifest(try Digest.sha256Hex(Manifests.bytes("C")))) == nil)
        try await store.delete(keys.target("h1"))
        #expect(try await FleetManifests.setStable(Manifests.bytes("C"), source: "c", by: "t", in: store, keys: keys).digest
                == (try Digest.sha256Hex(Manifests.bytes("C"))))
    }
}
