import PlugboardAPI
import PlugboardConcurrency
import PlugboardFleet
import PlugboardHost
import PlugboardJSON
import Testing

/// A real controller over the in-memory store and simulated hosts: the whole rollout's
/// conversation with the store, without etcd.
@Suite struct RolloutControllerTests {
    let keys = FleetKeys(prefix: "/test/fleet/")

    func controller(_ store: InMemoryFleetStore, waves: String = "1,100%", bake: Double = 0) throws(PlugboardError) -> RolloutController {
        var configuration = RolloutController.Configuration(
            keys: keys, waves: try WavePlan(waves),
            settings: .init(bakeSeconds: bake, maxErrorRate: 0.01, waveTimeoutSeconds: 20, rollbackTimeoutSeconds: 20), by: "test")
        configuration.tickSeconds = 0.05
        return RolloutController(store: store, configuration: configuration)
    }

    func started(hosts: [String], refusing: [String: Set<String>] = [:]) async throws -> (InMemoryFleetStore, SimulatedFleet, String) {
        let store = InMemoryFleetStore()
        let stable = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a.json", by: "test", in: store, keys: keys)
        let fleet = try await SimulatedFleet(store: store, keys: keys, hosts: hosts, refusing: refusing)
        return (store, fleet, stable.digest)
    }

    @Test func goodManifest_reachesEveryHost_andBecomesStable() async throws {
        let (store, fleet, previous) = try await started(hosts: ["web-3", "web-1", "web-2"])
        defer { fleet.stop() }
        let lines = LockedValueBox<[String]>([])
        let record = try #require(try await controller(store).run(manifest: Manifests.bytes("B"), source: "b.json") { line in
            lines.withLock { $0.append(line) }
        })
        #expect(record.state == "succeeded")
        #expect(record.previous == previous)
        #expect(record.waves.map(\.hosts) == [["web-1"], ["web-2", "web-3"]])
        #expect(try await FleetManifests.stable(in: store, keys: keys)?.digest == record.candidate)
        #expect(try await store.list(prefix: keys.targets).isEmpty)
        #expect(try await store.get(keys.rolloutLock) == nil)
        #expect(try await store.get(keys.rolloutHistory(record.id)) != nil)
        #expect(lines.withLock { $0 }.contains { $0.hasPrefix("wave 1/2: web-1 ->") })
    }

    @Test func refusedCandidate_stopsAtTheFirstWave_andRollsBack() async throws {
        let candidate = try Digest.sha256Hex(Manifests.bytes("Bad"))
        let (store, fleet, previous) = try await started(hosts: ["a", "b", "c"], refusing: ["a": [candidate]])
        defer { fleet.stop() }
        let record = try #require(try await controller(store).run(manifest: Manifests.bytes("Bad"), source: "bad.json"))
        #expect(record.state == "rolled back")
        #expect(record.reason?.contains("host \"a\" refused") == true)
        #expect(record.reason?.contains("reload.preflight_failed") == true)
        #expect(record.waves.map(\.state) == ["rolled back", "pending"])
        #expect(try await FleetManifests.stable(in: store, keys: keys)?.digest == previous)
        #expect(try await store.list(prefix: keys.targets).isEmpty)
        // b and c were never asked to change.
        let hosts = try await FleetManifests.hosts(in: store, keys: keys)
        #expect(hosts["b"]?.manifestDigest == previous && hosts["c"]?.manifestDigest == previous)
    }

    @Test func alreadyStable_isNothingToDo() async throws {
        let (store, fleet, _) = try await started(hosts: ["a"])
        defer { fleet.stop() }
        #expect(try await controller(store).run(manifest: Manifests.bytes("A"), source: "a.json") == nil)
    }

    @Test func secondRollout_andFleetSet_areRefused_namingTheFirst() async throws {
        let (store, fleet, _) = try await started(hosts: ["a"])
        defer { fleet.stop() }
        let lease = try await store.grantLease(ttlSeconds: 10)
        let lock = RolloutLock(id: "r1-first", candidate: String(repeating: "e", count: 64), startedAt: "2026-12-03T00:00:00.000Z", by: "ops@box")
        try await store.put(keys.rolloutLock, Array(lock.json.render(pretty: false).utf8), lease: lease)
        do throws(PlugboardError) {
            _ = try await controller(store).run(manifest: Manifests.bytes("B"), source: "b.json")
            Issue.record("a second rollout ran")
        } catch {
            #expect(error.code == .fleetRolloutInProgress)
            #expect(error.message.contains("r1-first"))
            #expect(error.detail?.contains("2026-12-03T00:00:00.000Z") == true)
        }
        do {
            _ = try await FleetManifests.setStable(Manifests.bytes("B"), source: "b.json", by: "t", in: store, keys: keys)
            Issue.record("fleet set ran during a rollout")
        } catch {
            #expect(error.code == .fleetRolloutInProgress)
        }
        // The lock's lease ends (its controller died): both may go ahead.
        store.expire(lease)
        _ = try await FleetManifests.setStable(Manifests.bytes("C"), source: "c.json", by: "t", in: store, keys: keys)
    }

    @Test func malformedManifest_isRefusedBeforeAnythingIsStored() async throws {
        let store = InMemoryFleetStore()
        do {
            _ = try await FleetManifests.setStable(Array("{\"plugins\": 3}".utf8), source: "x.json", by: "t", in: store, keys: keys)
            Issue.record("a malformed manifest was stored")
        } catch {
            #expect(error.code.area == "manifest")
        }
        #expect(try await store.list(prefix: keys.prefix).isEmpty)
    }

    @Test func abort_rollsTheRunningRolloutBack() async throws {
        let (store, fleet, previous) = try await started(hosts: ["a", "b"])
        defer { fleet.stop() }
        let running = Task { try await controller(store, bake: 600).run(manifest: Manifests.bytes("B"), source: "b.json") }
        // Wait for the first wave to bake: the record says so.
        for await _ in store.changes(prefix: keys.rolloutCurrent) {
            if let bytes = try await store.get(keys.rolloutCurrent),
               try RolloutRecord(bytes: bytes, what: "current").waves.first?.state == "baking" { break }
        }
        let aborted = try await RolloutController.abort(store: store, keys: keys, by: "t", timeoutSeconds: 20, clock: { MonotonicClock.now() })
        #expect(aborted.state == "aborted")
        let record = try #require(try await running.value)
        #expect(record.state == "aborted")
        #expect(try await FleetManifests.stable(in: store, keys: keys)?.digest == previous)
        #expect(try await FleetManifests.hosts(in: store, keys: keys)["a"]?.manifestDigest == previous)
    }

    @Test func abort_ofARolloutWhoseControllerDied_endsItItself() async throws {
        let store = InMemoryFleetStore()
        let record = RolloutRecord(id: "r2", candidate: "c", previous: "p", startedAt: "t", by: "x", wavesSpec: "1", bakeSeconds: 0,
                                   maxErrorRate: 0, waveTimeoutSeconds: 1, waves: [.init(hosts: ["a"], state: "applying")], state: "running")
        try await store.put(keys.rolloutCurrent, Array(record.json.render(pretty: false).utf8), lease: nil)
        try await store.put(keys.target("a"), Array(TargetRecord(digest: "c", rollout: "r2").json.render(pretty: false).utf8), lease: nil)
        let ended = try await RolloutController.abort(store: store, keys: keys, by: "ops", timeoutSeconds: 1, clock: { MonotonicClock.now() })
        #expect(ended.state == "aborted")
        #expect(try await store.get(keys.target("a")) == nil)
        do {
            _ = try await RolloutController.abort(store: store, keys: keys, by: "ops", timeoutSeconds: 1, clock: { MonotonicClock.now() })
            Issue.record("a second abort found a rollout")
        } catch {
            #expect(error.code == .fleetNoRollout)
        }
    }

    @Test func rolloutWithoutStableOrHosts_isRefused() async throws {
        let store = InMemoryFleetStore()
        await #expect(throws: PlugboardError.self) { try await controller(store).run(manifest: Manifests.bytes("B"), source: "b.json") }
        _ = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a.json", by: "t", in: store, keys: keys)
        do throws(PlugboardError) {
            _ = try await controller(store).run(manifest: Manifests.bytes("B"), source: "b.json")
            Issue.record("a rollout ran with no host")
        } catch {
            #expect(error.code == .fleetNothingToRollOut)
        }
    }
}
