#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardJSON
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

    @Test func aManifestThatDoesNotParse_isRefusedAtStart_andTheCopyServes() async throws {
        let store = InMemoryFleetStore()
        let folder = BuildProducts.temporaryFolder("fleet-malformed")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        // Written behind plugboard's back: fleet set would have refused it.
        let bad = Array("{\"plugins\": 3}".utf8)
        let digest = try Digest.sha256Hex(bad)
        try await store.put(keys.manifest(digest), bad, lease: nil)
        try await store.put(keys.stable, Array(StableRecord(digest: digest, setAt: "t", by: "x").json.render(pretty: false).utf8), lease: nil)
        let agent = agent(store, folder: folder)
        let plan = try await agent.prepare()
        #expect(plan.digest == digest)
        // What the host's checked start finds in it.
        let refusal = try #require(throws: PlugboardError.self) { try Manifest.load(path: FleetLocalCopy(folder: folder).manifestPath) }
        let next = try #require(try await agent.fallback(after: refusal))
        #expect(next.startedFrom == "local copy")
        #expect(next.digest == (try Digest.sha256Hex(Manifests.bytes("A"))))
        #expect(contents(FleetLocalCopy(folder: folder).manifestPath) == Manifests.bytes("A"))
    }

    /// The desired manifest refused, then the copy refused too (a plugin that now fails
    /// its preflight on this machine): the host starts from nothing, not-ready.
    @Test func aRefusedStart_fallsBackToTheCopy_thenToNothing() async throws {
        let store = InMemoryFleetStore()
        _ = try await FleetManifests.setStable(Manifests.bytes("B"), source: "b", by: "t", in: store, keys: keys)
        let folder = BuildProducts.temporaryFolder("fleet-refused-start")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        let agent = agent(store, folder: folder)
        #expect(try await agent.prepare().startedFrom == "etcd")
        let crashed = PlugboardError(.preflightCrashed, "plugin \"B\" crashed in preflight: SIGILL")
        #expect(try await agent.fallback(after: crashed)?.startedFrom == "local copy")
        #expect(try await agent.fallback(after: crashed)?.startedFrom == "empty")
        #expect(try Manifest.load(path: FleetLocalCopy(folder: folder).manifestPath).plugins.isEmpty)
        #expect(try await agent.fallback(after: crashed) == nil)
    }

    /// etcd without quorum keeps a read waiting (its own timeouts, then the client's
    /// retries) instead of refusing it: a host with a copy starts from it after the wait.
    @Test(.timeLimit(.minutes(1))) func aStoreThatDoesNotAnswer_startsFromTheCopy_afterTheStartWait() async throws {
        let folder = BuildProducts.temporaryFolder("fleet-no-quorum")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        var configuration = FleetAgent.Configuration(keys: keys, hostID: "h1", localCopy: FleetLocalCopy(folder: folder), version: "0.1.0")
        configuration.startWaitSeconds = 0.2
        let plan = try await FleetAgent(store: SilentFleetStore(), configuration: configuration).prepare()
        #expect(plan.startedFrom == "local copy")
        #expect(plan.digest == (try Digest.sha256Hex(Manifests.bytes("A"))))
    }

    @Test func aBadStableRecord_startsFromTheCopy() async throws {
        let store = InMemoryFleetStore()
        let folder = BuildProducts.temporaryFolder("fleet-bad-stable-start")
        try FleetLocalCopy(folder: folder).setApplied(Manifests.bytes("A"))
        try await store.put(keys.stable, Array("{}".utf8), lease: nil)
        let plan = try await agent(store, folder: folder).prepare()
        #expect(plan.startedFrom == "local copy")
    }
}

/// A store that never answers (etcd without quorum): every call waits until its task is
/// cancelled.
final class SilentFleetStore: FleetStore {
    private func silence() async throws(PlugboardError) -> Never {
        try? await Task.sleep(for: .seconds(3_600))
        throw PlugboardError(.fleetStoreFailed, "the silent store was asked and never answered")
    }

    func get(_ key: String) async throws(PlugboardError) -> [UInt8]? { try await silence() }
    func list(prefix: String) async throws(PlugboardError) -> [(key: String, value: [UInt8])] { try await silence() }
    func put(_ key: String, _ value: [UInt8], lease: Int64?) async throws(PlugboardError) { try await silence() }
    func delete(_ key: String) async throws(PlugboardError) { try await silence() }
    func transaction(when conditions: [FleetCondition], then writes: [FleetWrite]) async throws(PlugboardError) -> Bool { try await silence() }
    func grantLease(ttlSeconds: Int) async throws(PlugboardError) -> Int64 { try await silence() }
    func keepAlive(_ lease: Int64) async throws(PlugboardError) -> Bool { try await silence() }
    func revokeLease(_ lease: Int64) async throws(PlugboardError) { try await silence() }
    func changes(prefix: String) -> AsyncStream<Void> { AsyncStream { _ in } }
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
