import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardTestSupport
import Synchronization
import Testing

/// A running fleet host's agent over the in-memory store, with a real (empty) host.
@Suite struct FleetAgentRunTests {
    let keys = FleetKeys(prefix: "/t")

    /// A host's status in the store, read again at each change of its key.
    struct StatusWatch {
        let store: InMemoryFleetStore
        let key: String
        var changes: AsyncStream<Void>.Iterator

        init(_ store: InMemoryFleetStore, key: String) {
            self.store = store
            self.key = key
            changes = store.changes(prefix: key).makeAsyncIterator()
        }

        /// The first status, from the next change on, that `predicate` accepts.
        mutating func next(where predicate: (HostStatus) -> Bool) async throws -> HostStatus? {
            while await changes.next() != nil {
                if let bytes = try await store.get(key), let status = try? HostStatus(bytes: bytes, what: key), predicate(status) {
                    return status
                }
            }
            return nil
        }
    }

    /// The host's object counts, as the server would hand them over.
    final class Counts: Sendable {
        let requests = Atomic<Int>(0)
    }

    /// A target refused at start is reported as a running host reports it: refused, for
    /// that digest and that rollout, so the rollout counts it and rolls back.
    @Test(.timeLimit(.minutes(1))) func aTargetRefusedAtStart_isReportedWithItsRollout() async throws {
        let store = InMemoryFleetStore()
        _ = try await FleetManifests.setStable(Manifests.bytes("A"), source: "a", by: "t", in: store, keys: keys)
        let candidate = try await FleetManifests.store(Manifests.bytes("B"), source: "b", in: store, keys: keys)
        try await store.put(keys.target("h1"), TargetRecord(digest: candidate, rollout: "r1").json.recordBytes, lease: nil)
        let folder = BuildProducts.temporaryFolder("fleet-target-refused")
        let copy = FleetLocalCopy(folder: folder)
        var configuration = FleetAgent.Configuration(keys: keys, hostID: "h1", localCopy: copy, version: "0.1.0")
        configuration.heartbeatSeconds = 0.05
        let agent = FleetAgent(store: store, configuration: configuration)
        #expect(try await agent.prepare().digest == candidate)
        let crashed = PlugboardError(.preflightCrashed, "plugin \"B\" crashed in preflight: SIGILL")
        #expect(try await agent.fallback(after: crashed)?.startedFrom == "empty")
        let host = try await PluginHost.start(PluginHost.Configuration(manifestPath: copy.manifestPath, cacheDirectory: folder + "/cache"))
        try await agent.started(requiredFailure: host.requiredFailure)
        var watch = StatusWatch(store, key: keys.host("h1"))
        let run = Task { await agent.run(host: host, address: "http://127.0.0.1:1", totals: { (0, 0) }) }
        defer { run.cancel() }
        let reported = try await watch.next { _ in true }
        let last = try #require(reported?.lastReload)
        #expect(last.refused)
        #expect(last.digest == candidate)
        #expect(last.rollout == "r1")
        #expect(last.errorCode == "reload.preflight_crashed")
        #expect(reported?.manifestDigest == "")
        #expect(reported?.startedFrom == "empty")
    }

    /// Host h1's agent, started with nothing desired (a real, empty host) and a 50 ms
    /// heartbeat, running over `store` until the returned task is cancelled.
    func runEmptyHost(_ label: String, over store: InMemoryFleetStore, counts: Counts,
                      _ configure: (inout FleetAgent.Configuration) -> Void) async throws -> Task<Void, Never> {
        let folder = BuildProducts.temporaryFolder(label)
        let copy = FleetLocalCopy(folder: folder)
        var configuration = FleetAgent.Configuration(keys: keys, hostID: "h1", localCopy: copy, version: "0.1.0")
        configuration.heartbeatSeconds = 0.05
        configure(&configuration)
        let agent = FleetAgent(store: store, configuration: configuration)
        #expect(try await agent.prepare().startedFrom == "empty")
        let host = try await PluginHost.start(PluginHost.Configuration(manifestPath: copy.manifestPath, cacheDirectory: folder + "/cache"))
        return Task { await agent.run(host: host, address: "http://127.0.0.1:1", totals: { (counts.requests.load(ordering: .relaxed), 0) }) }
    }

    /// A bad `stable` is the fleet's problem, not the host's: it serves on, and its
    /// status stays fresh (the rollout and `fleet status` read it).
    @Test(.timeLimit(.minutes(1))) func aBadStableRecord_keepsTheHostsStatusFresh() async throws {
        let store = InMemoryFleetStore()
        let counts = Counts()
        var watch = StatusWatch(store, key: keys.host("h1"))
        let run = try await runEmptyHost("fleet-bad-stable", over: store, counts: counts) { _ in }
        defer { run.cancel() }

        #expect(try await watch.next { _ in true } != nil)
        for value in ["garbage", "{}"] {
            try await store.put(keys.stable, Array(value.utf8), lease: nil)
            counts.requests.add(5, ordering: .relaxed)
            let total = counts.requests.load(ordering: .relaxed)
            #expect(try await watch.next { $0.requests == Int64(total) } != nil)
        }
    }

    /// The agent's log lines, each handed to the test as it is logged.
    final class LogLines: LogHandler {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
            continuation.yield(message)
        }
    }

    /// While etcd is unreachable the agent waits by `RetryPolicy` (full jitter up to
    /// `maxBackoffSeconds`) and tries again, and once it answers the host's status is
    /// written again.
    @Test(.timeLimit(.minutes(1))) func anUnreachableStore_isRetried_untilItAnswers() async throws {
        let store = InMemoryFleetStore()
        let counts = Counts()
        let lines = LogLines()
        var watch = StatusWatch(store, key: keys.host("h1"))
        var logged = lines.stream.makeAsyncIterator()
        let run = try await runEmptyHost("fleet-unreachable", over: store, counts: counts) { configuration in
            configuration.logger = Logger(label: "fleet", handler: lines)
            configuration.maxBackoffSeconds = 0.2
        }
        defer { run.cancel() }

        func line(startingWith prefix: String) async -> String? {
            while let line = await logged.next() {
                if line.hasPrefix(prefix) { return line }
            }
            return nil
        }
        #expect(try await watch.next { _ in true } != nil)
        store.reachable = false
        #expect(await line(startingWith: "fleet: etcd unreachable") != nil)
        counts.requests.add(7, ordering: .relaxed)
        store.reachable = true
        #expect(await line(startingWith: "fleet: etcd reachable again") != nil)
        #expect(try await watch.next { $0.requests == 7 } != nil)
    }
}
