import PlugboardAPI
import PlugboardEtcd
import PlugboardTestSupport
import Testing

/// The client against a real three-member cluster that every test here shares (none
/// stops a member); each test keeps to keys of its own.
@Suite(.enabled(if: EtcdCluster.isInstalled, "etcd not installed: apt-get install etcd-server"))
struct EtcdClientTests {
    @Test func putGetRangeDelete() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        let prefix = freshPrefix("kv")
        let first = try await client.put(prefix + "a", Array("one".utf8))
        let second = try await client.put(prefix + "b", [0, 0xff, 10])
        #expect(second > first)
        let (a, revision) = try await client.get(prefix + "a")
        #expect(a?.value == Array("one".utf8) && a?.version == 1 && a?.createRevision == first && a?.modRevision == first)
        #expect(revision >= second)
        let (missing, _) = try await client.get(prefix + "none")
        #expect(missing == nil)

        try await client.put(prefix + "a", Array("two".utf8))
        let (all, _) = try await client.range(prefix: prefix)
        #expect(all.map(\.key) == [prefix + "a", prefix + "b"])
        #expect(all.first?.version == 2 && all.last?.value == [0, 0xff, 10])
        // A prefix that is the start of another key's name does not take it.
        #expect(try await client.range(prefix: prefix + "a").kvs.count == 1)

        try await client.delete(prefix + "a")
        #expect(try await client.get(prefix + "a").0 == nil)
        try await client.delete(prefix, prefix: true)
        #expect(try await client.range(prefix: prefix).kvs.isEmpty)
    }

    @Test func createIfAbsent_winsOnce_underConcurrency() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        let key = freshPrefix("lock") + "holder"
        let results = try await withThrowingTaskGroup(of: (Int, EtcdTxnResult).self) { group in
            for contender in 0..<12 {
                group.addTask {
                    let txn = EtcdTxn(compare: [EtcdCompare(key, .createRevision, .equal, 0)],
                                      success: [.put(key, Array("\(contender)".utf8), lease: nil)], failure: [.get(key)])
                    return (contender, try await client.txn(txn))
                }
            }
            var all: [(Int, EtcdTxnResult)] = []
            for try await result in group { all.append(result) }
            return all
        }
        let winners = results.filter { $0.1.succeeded }
        #expect(winners.count == 1)
        let (holder, _) = try await client.get(key)
        #expect(holder?.value == Array("\(winners.first?.0 ?? -1)".utf8))
        // Every loser read the winner's value in its failure branch.
        for (_, result) in results where !result.succeeded {
            #expect(result.ranges.count == 1 && result.ranges[0].first?.value == holder?.value)
        }
        // A comparison on the value and on the version.
        let swap = EtcdTxn(compare: [EtcdCompare(key, value: .equal, holder?.value ?? []), EtcdCompare(key, .version, .equal, 1)],
                           success: [.put(key, Array("next".utf8), lease: nil), .get(key)], failure: [])
        let swapped = try await client.txn(swap)
        #expect(swapped.succeeded && swapped.ranges.first?.first?.value == Array("next".utf8))
        #expect(try await client.txn(swap).succeeded == false)
    }

    @Test func leaseGrantKeepAliveAndExpiry_deletesTheKey() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        let key = freshPrefix("lease") + "member"
        let lease = try await client.grantLease(ttl: 2)
        try await client.put(key, [1], lease: lease)
        #expect(try await client.get(key).0?.lease == lease)
        #expect(try await client.keepAliveOnce(lease) >= 1)

        // Left alone, the lease expires and takes its key: wait for the deletion.
        let watch = client.watch(key: key, fromRevision: nil)
        let deleted = try await within("the lease's expiry") { () -> Bool in
            for await event in watch {
                if case .changes(let changes, _) = event, changes.contains(where: { if case .delete = $0 { true } else { false } }) {
                    return true
                }
            }
            return false
        }
        #expect(deleted)
        #expect(try await client.get(key).0 == nil)
        await #expect {
            try await client.keepAliveOnce(lease)
        } throws: { ($0 as? PlugboardError)?.code == .etcdLeaseExpired }
        await #expect {
            try await client.put(key, [2], lease: lease)
        } throws: { ($0 as? PlugboardError)?.code == .etcdLeaseExpired }

        // Revoking deletes at once; revoking a gone lease is no error.
        let second = try await client.grantLease(ttl: 30)
        try await client.put(key, [3], lease: second)
        try await client.revokeLease(second)
        #expect(try await client.get(key).0 == nil)
        try await client.revokeLease(second)
    }

    @Test func watchSeesPutsAndDeletes_inOrder() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        let prefix = freshPrefix("watch")
        let start = try await client.put(prefix + "start", [0])
        let writer = Task {
            for round in 0..<20 {
                try await client.put(prefix + "k\(round % 3)", Array("\(round)".utf8))
                if round % 5 == 4 { try await client.delete(prefix + "k\(round % 3)") }
            }
            return try await client.put(prefix + "end", [1])
        }
        let last = try await writer.value
        let seen = try await within("the watch's events") {
            var changes: [EtcdChange] = []
            for await event in client.watch(key: prefix, prefix: true, fromRevision: start + 1) {
                guard case .changes(let batch, let revision) = event else { continue }
                #expect(revision == batch.last?.modRevision)
                changes += batch
                if revision >= last { break }
            }
            return changes
        }
        #expect(seen.count == 25)
        // Other tests write to the shared cluster too: revisions rise, not one by one.
        let revisions = seen.map(\.modRevision)
        #expect(zip(revisions, revisions.dropFirst()).allSatisfy { $0 < $1 } && revisions.first! > start && revisions.last == last)
        let puts = seen.compactMap { if case .put(let kv) = $0 { String(decoding: kv.value, as: UTF8.self) } else { nil } }
        #expect(puts.dropLast() == ArraySlice((0..<20).map { "\($0)" }))
        #expect(seen.filter { if case .delete = $0 { true } else { false } }.count == 4)
        if case .put(let kv) = seen[0] { #expect(kv.key == prefix + "k0" && kv.value == Array("0".utf8)) }
    }

    @Test func watchFromNow_seesOnlyLaterChanges_andReopensQuietlyWhenIdle() async throws {
        let cluster = try await SharedEtcd.get()
        let log = CapturedLog()
        let client = EtcdClient(endpoints: cluster.etcdEndpoints, watchIdleTimeout: .seconds(1), logger: log.logger)
        let key = freshPrefix("idle") + "k"
        try await client.put(key, Array("before".utf8))
        let (opened, signal) = AsyncStream.makeStream(of: Void.self)
        let watching = Task {
            var iterator = client.watch(key: key, fromRevision: nil).makeAsyncIterator()
            signal.yield()
            return await iterator.next()
        }
        _ = await opened.first { _ in true }
        // Silent for longer than the idle timeout, twice over: a wait on time itself.
        try await Task.sleep(for: .milliseconds(2500))
        try await client.put(key, Array("after".utf8))
        let event = try await within("the change after the silence") { await watching.value }
        guard case .changes(let changes, _) = event else { Issue.record("expected changes, got \(String(describing: event))"); return }
        #expect(changes.count == 1)
        if case .put(let kv) = changes.first { #expect(kv.value == Array("after".utf8)) }
        #expect(log.lines.filter { $0.level >= .warning }.isEmpty, "\(log.lines)")
        #expect(log.lines.contains { $0.message.contains("idle timeout") })
    }

    @Test func failsOver_whenTheFirstEndpointIsDead() async throws {
        let cluster = try await SharedEtcd.get()
        let dead = EtcdEndpoint(host: "127.0.0.1", port: try EtcdCluster.freePort())
        let log = CapturedLog()
        let client = EtcdClient(endpoints: [dead] + cluster.etcdEndpoints, requestTimeout: .seconds(5), logger: log.logger)
        let key = freshPrefix("failover") + "k"
        let written = try await client.put(key, [7])
        #expect(try await client.get(key).0?.value == [7])
        // The member that answered is asked first from then on: one failure in all.
        #expect(log.lines.filter { $0.message.contains("\(dead)") }.count == 1)
        // And the watch, starting on the dead one, moves on too.
        let event = try await within("the watch past a dead endpoint") { () -> EtcdWatchEvent? in
            for await event in EtcdClient(endpoints: [dead] + cluster.etcdEndpoints, logger: Logger.disabled)
                .watch(key: key, fromRevision: written) { return event }
            return nil
        }
        guard case .changes(let changes, _) = event else { Issue.record("expected changes, got \(String(describing: event))"); return }
        #expect(changes.first?.key == key)
    }

    @Test func everyMemberNamesTheSameLeader_andItsOwnID() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        var statuses: [(leader: UInt64, member: UInt64)] = []
        for endpoint in cluster.etcdEndpoints { statuses.append(try await client.status(of: endpoint)) }
        #expect(Set(statuses.map(\.member)).count == 3)
        #expect(Set(statuses.map(\.leader)).count == 1)
        #expect(statuses.contains { $0.member == $0.leader })
        let leader = try await cluster.leader()
        #expect(statuses[leader].member == statuses[leader].leader)
    }

    @Test func sessionGrantsANewLease_whenItsLeaseIsLost() async throws {
        let cluster = try await SharedEtcd.get()
        let client = cluster.client()
        let key = freshPrefix("session") + "host"
        let (leases, announce) = AsyncStream.makeStream(of: Int64.self)
        // A TTL of 9 s (a renewal every 3 s): with 3 s, a cooperative pool starved by the
        // other suites' blocking waits once held the renewal back past the TTL.
        let session = EtcdSession(client: client, ttl: 9, logger: Logger.disabled) { lease in
            _ = try? await client.put(key, [1], lease: lease)
            announce.yield(lease)
        }
        let nextLease = { @Sendable () async throws -> Int64? in
            try await within("a lease from the session") { () -> Int64? in
                for await lease in leases { return lease }
                return nil
            }
        }
        let first = try await nextLease()
        #expect(session.leaseID == first)
        #expect(try await client.get(key).0?.lease == first)

        // Kept alive past its TTL.
        try await Task.sleep(for: .seconds(10))
        #expect(try await client.keepAliveOnce(first ?? 0) > 0)

        // Lost (revoked behind the session's back, as an expiry would): a new one, the key put again.
        try await client.revokeLease(first ?? 0)
        let second = try await nextLease()
        #expect(second != nil && second != first)
        #expect(try await client.get(key).0?.lease == second)

        await session.close()
        #expect(session.leaseID == nil)
        #expect(try await client.get(key).0 == nil, "close revokes the lease and so deletes the key")
    }
}
