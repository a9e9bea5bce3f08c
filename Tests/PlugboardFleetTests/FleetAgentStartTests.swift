#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Which manifest a fleet host starts from: etcd's, its local copy, or none.
@Suite struct FleetAgentStartTests {
    let keys = FleetKeys(prefix: "/t")

    func agent(_ store: InMemoryFleetStore, folder: String, id: String = "h1") -> FleetAgent {
        FleetAgent(store: store, configuration: .init(keys: keys, hostID: id, localCopy: FleetLocalCopy(folder: folder), version: "0.1.0"))
    }

    func contents(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
    }

    @Test func startsFromTheStableManifest_whenEtcdAnswers() async throws {
        let store = InMemoryFleetStore()
        let stable = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a", by: "t", in: store, keys: keys)
        let folder = BuildProducts.temporaryFolder("fleet-start") + "/state"
        let plan = try await agent(store, folder: folder).prepare()
        #expect(plan.startedFrom == "etcd")
        #expect(plan.digest == stable.digest)
        #expect(contents(FleetLocalCopy(folder: folder).manifestPath) == Manifests.bytes("A"))
    }

    @Test func aStartThatWorked_becomesTheLocalCopy_andOneThatDidNot_doesNot() async throws {
        let store = InMemoryFleetStore()
        _ = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a", by: "t", in: store, keys: keys)
        let folder = BuildProducts.temporaryFolder("fleet-started")
        let failing = agent(store, folder: folder)
        _ = try await failing.prepare()
        try await failing.started(requiredFailure: PlugboardError(.requiredPluginFailed, "required plugin \"A\" is failed"))
        #expect(FleetLocalCopy(folder: folder).applied() == nil)
        let working = agent(store, folder: folder)
        _ = try await working.prepare()
        try await working.started(requiredFailure: nil)
        #expect(FleetLocalCopy(folder: folder).applied() == Manifests.bytes("A"))
    }

    @Test func aHostsTarget_winsOverStable() async throws {
        let store = InMemoryFleetStore()
        _ = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a", by: "t", in: store, keys: keys)
        let b = try await FleetManifests.store(Manifests.bytes("B"), source: "b", in: store, keys: keys)
        try await store.put(keys.target("h1"), Array(TargetRecord(digest: b, rollout: "r").json.render(pretty: false).utf8), lease: nil)
        let plan = try await agent(store, folder: BuildProducts.temporaryFolder("fleet-target")).prepare()
        #expect(plan.digest == b)
    }

    @Test func etcdDown_startsFromTheLocalCopy_andSaysSo() async throws {
        let store = InMemoryFleetStore()
        let folder = BuildProducts.temporaryFolder("fleet-copy")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        store.reachable = false
        let plan = try await agent(store, folder: folder).prepare()
        #expect(plan.startedFrom == "local copy")
        #expect(plan.digest == (try Digest.sha256Hex(Manifests.bytes("A"))))
        #expect(contents(FleetLocalCopy(folder: folder).manifestPath) == Manifests.bytes("A"))
    }

    @Test func etcdDown_withoutACopy_startsEmpty() async throws {
        let store = InMemoryFleetStore()
        store.reachable = false
        let plan = try await agent(store, folder: BuildProducts.temporaryFolder("fleet-empty")).prepare()
        #expect(plan.startedFrom == "empty")
        #expect(plan.digest == "")
    }

    @Test func aManifestThatDoesNotParse_isRefused_andTheCopyServes() async throws {
        let store = InMemoryFleetStore()
        let folder = BuildProducts.temporaryFolder("fleet-malformed")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        // Written behind plugboard's back: fleet set would have refused it.
        let bad = Array("{\"plugins\": 3}".utf8)
        let digest = try Digest.sha256Hex(bad)
        try await store.put(keys.manifest(digest), bad, lease: nil)
        try await store.put(keys.stable, Array(StableRecord(digest: digest, setAt: "t", by: "x").json.render(pretty: false).utf8), lease: nil)
        let plan = try await agent(store, folder: folder).prepare()
        #expect(plan.startedFrom == "local copy")
        #expect(plan.digest == (try Digest.sha256Hex(Manifests.bytes("A"))))
    }
}

/// Each record reads back as written.
@Suite struct FleetRecordTests {
    @Test func hostStatus_roundTrips() throws {
        var status = Hosts.refused("web-1", Hosts.candidate, running: Hosts.previous)
        status.requests = 12
        status.errors = 3
        let back = try HostStatus(bytes: Array(status.json.render(pretty: false).utf8), what: "hosts/web-1")
        #expect(back == status)
        #expect(back.errorRate == 0.25)
    }

    @Test func rolloutRecord_roundTrips() throws {
        let record = RolloutRecord(id: "r1", candidate: "c", previous: "p", startedAt: "t", by: "me", wavesSpec: "1,100%", bakeSeconds: 2.5,
                                   maxErrorRate: 0.01, waveTimeoutSeconds: 60, waves: [.init(hosts: ["a"], state: "done")], state: "rolled back",
                                   reason: "host \"a\" refused", stragglers: ["b"], endedAt: "t2")
        #expect(try RolloutRecord(bytes: Array(record.json.render(pretty: false).utf8), what: "r") == record)
    }

    @Test func aRecordMissingAMember_isRefused_namingIt() {
        do {
            _ = try StableRecord(bytes: Array("{\"digest\": \"d\"}".utf8))
            Issue.record("an incomplete record was read")
        } catch {
            #expect(error.code == .fleetRecordInvalid)
            #expect(error.message.contains("setAt"))
        }
    }
}
