import PlugboardAPI
import PlugboardEtcd
import PlugboardTestSupport
import Testing

/// The client while members are killed, stopped and started: each test has a cluster of
/// its own, one test at a time (each start costs a few seconds, and the kills would
/// disturb a shared one).
@Suite(.serialized, .enabled(if: EtcdCluster.isInstalled, "etcd not installed: apt-get install etcd-server"))
struct EtcdFailureTests {
    @Test func watchResumesAcrossAKilledMember_noChangeLostNoneTwice() async throws {
        let cluster = try await EtcdCluster.start()
        let writer = cluster.client()
        let log = CapturedLog()
        // A client of its own, whose watch opens on member 0, the one killed.
        let watcher = cluster.client(lines: log)
        let key = freshPrefix("resume") + "counter"
        let start = try await writer.put(key, Array("start".utf8))
        let total = 200
        let (progress, report) = AsyncStream.makeStream(of: Int.self)
        let watching = Task {
            var values: [String] = []
            var revisions: [Int64] = []
            for await event in watcher.watch(key: key, fromRevision: start + 1) {
                guard case .changes(let changes, _) = event else { continue }
                for case .put(let kv) in changes {
                    values.append(String(decoding: kv.value, as: UTF8.self))
                    revisions.append(kv.modRevision)
                }
                report.yield(values.count)
                if values.count >= total { break }
            }
            return (values, revisions)
        }
        for value in 0..<60 { try await writer.put(key, Array("\(value)".utf8)) }
        _ = try await within("the watch's first 60 changes") {
            for await seen in progress where seen >= 60 { return seen }
            return 0
        }
        cluster.kill(member: 0)
        for value in 60..<total { try await writer.put(key, Array("\(value)".utf8)) }
        let (values, revisions) = try await within("the watch's last changes") { await watching.value }
        #expect(values == (0..<total).map { "\($0)" })
        #expect(revisions == Array((start + 1)...(start + Int64(total))))
        #expect(log.warnings(containing: "lost its stream") == 1)
        #expect(log.warnings(containing: "reconnected") == 1)
    }

    @Test func leaderKilledMidStreamOfPuts_everyPutSucceeds() async throws {
        let cluster = try await EtcdCluster.start()
        let client = cluster.client()
        let prefix = freshPrefix("leader")
        let leader = try await cluster.leader()
        for index in 0..<150 {
            if index == 30 { cluster.kill(member: leader) }
            try await client.put(prefix + "k\(index)", [UInt8(index % 256)])
        }
        let (kvs, _) = try await client.range(prefix: prefix)
        #expect(kvs.count == 150)
        let newLeader = try await cluster.leader()
        #expect(newLeader != leader)
    }

    @Test func everyMemberStopped_isUnreachable_namingEachEndpoint() async throws {
        let cluster = try await EtcdCluster.start()
        let client = cluster.client(requestTimeout: .seconds(2))
        try await client.put("/test/before", [1])
        cluster.stopAll()
        let started = ContinuousClock.now
        do {
            _ = try await within("the unreachable error") { try await client.get("/test/before") }
            Issue.record("a read answered with every member stopped")
        } catch let error as PlugboardError {
            #expect(error.code == .etcdUnreachable)
            for endpoint in cluster.etcdEndpoints { #expect(error.detail?.contains("\(endpoint)") == true, "\(error)") }
            #expect(error.hint?.contains("last applied manifest") == true)
        }
        // Refused connections fail at once: only the backoff between rounds takes time.
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func sessionKeepsItsKey_acrossEtcdDownPastItsTTL() async throws {
        let cluster = try await EtcdCluster.start()
        let client = cluster.client(requestTimeout: .seconds(2))
        let key = freshPrefix("session") + "host"
        let (leases, announce) = AsyncStream.makeStream(of: Int64.self)
        let session = EtcdSession(client: client, ttl: 2, logger: Logger.disabled) { lease in
            _ = try? await client.put(key, [1], lease: lease)
            announce.yield(lease)
        }
        _ = try await within("the first lease") { () -> Int64? in
            for await lease in leases { return lease }
            return nil
        }
        cluster.stopAll()
        // Down for longer than the TTL: a wait on time itself, which is the point.
        try await Task.sleep(for: .seconds(4))
        try await cluster.start(members: [0, 1, 2])
        // The new leader extends every lease it finds (etcd's lessor does on promotion),
        // or the lease expired and the session granted another and put the key again:
        // either way the key comes back under the session's live lease.
        let lease = try await within("the key under a live lease") { () -> Int64 in
            while true {
                if let current = session.leaseID, let kv = try? await client.get(key).0, kv.lease == current,
                   (try? await client.keepAliveOnce(current)) != nil {
                    return current
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        #expect(session.leaseID == lease)
        await session.close()
        #expect(try await client.get(key).0 == nil)
    }

    @Test func watchFromACompactedRevision_resyncs() async throws {
        let cluster = try await EtcdCluster.start()
        let client = cluster.client()
        let prefix = freshPrefix("compact")
        let first = try await client.put(prefix + "a", [1])
        try await client.put(prefix + "a", [2])
        try await client.put(prefix + "b", [3])
        let now = try await client.delete(prefix + "b")
        try await client.compact(revision: now)
        await #expect {
            _ = try await client.get(prefix + "a", atRevision: first)
        } throws: { ($0 as? PlugboardError)?.code == .etcdCompacted }

        let event = try await within("the resync") { () -> EtcdWatchEvent? in
            for await event in client.watch(key: prefix, prefix: true, fromRevision: first) { return event }
            return nil
        }
        guard case .resynced(let kvs, let revision) = event else {
            Issue.record("expected .resynced, got \(String(describing: event))")
            return
        }
        #expect(kvs.map(\.key) == [prefix + "a"] && kvs.first?.value == [2])
        #expect(revision >= now)
    }
}
