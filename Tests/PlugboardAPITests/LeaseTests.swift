import PlugboardAPI
import Testing

@Suite("Leases and draining")
struct LeaseTests {
    /// A container with the managed worker "v1" of owner "p" running.
    private func containerWithV1(_ journal: Journal) async throws -> Container {
        let c = Container()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true) { _ in JournalWorker("v1", journal: journal) }
        }
        return c
    }

    private func swapToV2(_ c: Container, _ journal: Journal) async throws {
        try await c.transaction(owner: "p") { tx in
            try tx.replace((any Worker).self, managed: true) { _ in JournalWorker("v2", journal: journal) }
        }
    }

    @Test func leaseOnAnOlderGeneration_delaysTheStopOfAReplacedService() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let lease = c.lease()
        try await swapToV2(c, journal)
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2"], "v1 must not stop while a lease may use it")
        lease.release()
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
    }

    @Test func lease_resolvesFromTheGenerationItWasTakenOn() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let lease = c.lease()
        defer { lease.release() }
        #expect(lease.generation == c.generation)
        try await swapToV2(c, journal)
        #expect(try lease.resolve((any Worker).self).name == "v1")
        let inferred: any Worker = try lease.resolve()
        #expect(inferred.name == "v1")
        #expect(try c.resolve((any Worker).self).name == "v2")
        #expect(lease.generation < c.generation)
    }

    @Test func everyLeaseOnAnOlderGeneration_mustEnd_beforeTheStop() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let first = c.lease()
        let second = c.lease()
        try await swapToV2(c, journal)
        first.release()
        await c.awaitPendingStops()
        #expect(!journal.entries.contains("stop v1"))
        first.release()  // releasing twice must not count twice
        await c.awaitPendingStops()
        #expect(!journal.entries.contains("stop v1"))
        second.release()
        await c.awaitPendingStops()
        #expect(journal.entries.last == "stop v1")
    }

    @Test func leaseTakenAfterTheSwap_doesNotDelayTheStop() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        try await swapToV2(c, journal)
        let newer = c.lease()
        defer { newer.release() }
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
    }

    @Test func withLease_holdsTheStopBackUntilItsBodyReturns() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let during = try await c.withLease { lease -> [String] in
            try await swapToV2(c, journal)
            await c.awaitPendingStops()
            #expect(try lease.resolve((any Worker).self).name == "v1")
            return journal.entries
        }
        #expect(during == ["start v1", "start v2"])
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
    }

    @Test func withLease_releasesTheLeaseWhenItsBodyThrows() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        await #expect(throws: Boom.self) {
            try await c.withLease { _ in
                try await swapToV2(c, journal)
                throw Boom(reason: "request failed")
            }
        }
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
    }

    @Test func aLeaseThatIsDropped_isReleased() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        do {
            let lease = c.lease()
            _ = lease.generation
            try await swapToV2(c, journal)
        }
        await c.awaitPendingStops()
        #expect(journal.entries.last == "stop v1")
    }

    @Test func stopsWaitForEveryOlderLease_acrossSeveralSwaps() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let onV1 = c.lease()
        try await swapToV2(c, journal)
        let onV2 = c.lease()
        try await c.transaction(owner: "p") { tx in
            try tx.replace((any Worker).self, managed: true) { _ in JournalWorker("v3", journal: journal) }
        }
        onV2.release()
        await c.awaitPendingStops()
        #expect(journal.entries(startingWith: "stop").isEmpty, "v1 and v2 wait for the lease on v1")
        onV1.release()
        await c.awaitPendingStops()
        #expect(Set(journal.entries(startingWith: "stop")) == ["stop v1", "stop v2"])
        #expect(try c.resolve((any Worker).self).stopCount == 0)
    }

    @Test func outstandingLeases_countsEachGenerationsOpenLeases_andForgetsEndedOnes() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        let v1 = c.generation
        let first = c.lease(), second = c.lease()
        try await swapToV2(c, journal)
        let v2 = c.generation
        let third = c.lease()
        #expect(c.outstandingLeases() == [v1: 2, v2: 1])
        first.release()
        #expect(c.outstandingLeases() == [v1: 1, v2: 1])
        third.release()
        #expect(c.outstandingLeases() == [v1: 1])
        second.release()
        #expect(c.outstandingLeases().isEmpty)
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
    }

    @Test func aLeaseEndedBeforeTheSwap_holdsNothingBack_andOneOnTheFirstGenerationDoes() async throws {
        let journal = Journal()
        let c = try await containerWithV1(journal)
        c.lease().release()
        try await swapToV2(c, journal)
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])

        // Generation 0, before anything was registered, is leased like any other, and
        // each container counts its own.
        let fresh = Container()
        let onNothing = fresh.lease()
        #expect(onNothing.generation == 0)
        #expect(Container().outstandingLeases().isEmpty)
        try await fresh.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true) { _ in JournalWorker("w1", journal: journal) }
        }
        try await fresh.transaction(owner: "p") { tx in
            try tx.replace((any Worker).self, managed: true) { _ in JournalWorker("w2", journal: journal) }
        }
        await fresh.awaitPendingStops()
        #expect(!journal.entries.contains("stop w1"), "the lease on generation 0 is older than w1's retirement")
        #expect(fresh.outstandingLeases() == [0: 1])
        onNothing.release()
        await fresh.awaitPendingStops()
        #expect(journal.entries.last == "stop w1")
    }

    @Test func awaitPendingStops_returnsAtOnce_whenNothingIsPending() async {
        let c = Container()
        let finished = await finishes(within: 60) { await c.awaitPendingStops() }
        #expect(finished)
    }
}
