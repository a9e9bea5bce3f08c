import PlugboardAPI
import PlugboardEtcd
import PlugboardHTTPClient
import Testing

/// What the client sends again and what it does not, against fake members that fail on
/// cue (no etcd needed): reads, puts and lease calls go round the members; a transaction
/// goes again only when etcd certainly did not take it.
struct EtcdFailoverRulesTests {
    static func client(_ members: [FakeEtcdMember]) -> EtcdClient {
        // The rounds stop once three request timeouts have passed; with 5 s, a first round
        // held up by the other suites on two cores ended the test's count at one round.
        EtcdClient(endpoints: members.map { EtcdEndpoint(host: "127.0.0.1", port: $0.port) }, requestTimeout: .seconds(60),
                   retry: RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)), logger: .disabled)
    }

    static func code(_ body: () async throws -> Void) async -> PlugboardError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? PlugboardError
        }
    }

    @Test func aPutGoesRoundEveryMember_thenIsUnreachable_namingThem() async throws {
        let members = [try FakeEtcdMember(.closeAfterRequest), try FakeEtcdMember(.unavailable("etcdserver: no leader"))]
        let error = await Self.code { try await Self.client(members).put("/k", [1]) }
        #expect(error?.code == .etcdUnreachable)
        #expect(error?.detail?.contains("127.0.0.1:\(members[0].port)") == true && error?.detail?.contains("127.0.0.1:\(members[1].port)") == true)
        #expect(error?.detail?.contains("no leader") == true, "the last failure is named: \(error?.detail ?? "")")
        // Three rounds of two members.
        #expect(members.map(\.requestCount) == [3, 3])
    }

    @Test func aTransactionCutOffAfterItWasSent_isOutcomeUnknown_andNotSentAgain() async throws {
        let members = [try FakeEtcdMember(.closeAfterRequest), try FakeEtcdMember(.closeAfterRequest)]
        let txn = EtcdTxn(compare: [EtcdCompare("/k", .createRevision, .equal, 0)], success: [.put("/k", [1], lease: nil)])
        let error = await Self.code { _ = try await Self.client(members).txn(txn) }
        #expect(error?.code == .etcdOutcomeUnknown)
        #expect(members.map(\.requestCount) == [1, 0])
    }

    @Test func aTransactionRefusedWithNoLeader_goesAgain_butLeaderChangedDoesNot() async throws {
        let txn = EtcdTxn(compare: [], success: [.put("/k", [1], lease: nil)])
        let noLeader = [try FakeEtcdMember(.unavailable("etcdserver: no leader"))]
        #expect(await Self.code { _ = try await Self.client(noLeader).txn(txn) }?.code == .etcdUnreachable)
        #expect(noLeader[0].requestCount == 3)

        let changed = [try FakeEtcdMember(.unavailable("etcdserver: leader changed"))]
        #expect(await Self.code { _ = try await Self.client(changed).txn(txn) }?.code == .etcdOutcomeUnknown)
        #expect(changed[0].requestCount == 1)
    }
}
