import PlugboardAPI
import Testing

/// A store that can say it does not work, for the verifying commit of a hot swap.
final class CheckedStore: Store, HealthChecking {
    let label: String
    let healthy: Bool
    let journal: Journal
    init(_ label: String, healthy: Bool, journal: Journal) {
        self.label = label
        self.healthy = healthy
        self.journal = journal
    }

    func healthCheck() async throws {
        journal.record("check \(label)")
        if !healthy { throw PlugboardError(.storageUnavailable, "\(label) cannot reach its bucket") }
    }
}

@Suite("Commits of several transactions (hot swap)")
struct BatchCommitTests {
    @Test func removalsAndRegistrationsOfSeveralOwners_publishOneGeneration() async throws {
        let c = Container()
        try c.register((any Store).self, owner: "Old", instance: MemoryStore("old"))
        try c.register((any Greeter).self, owner: "Greeting", instance: English())
        let before = c.generation
        let removal = c.makeTransaction(owner: "Old")
        removal.unregisterAll()
        let replacement = c.makeTransaction(owner: "Old")
        try replacement.register((any Store).self, instance: MemoryStore("new"))
        let added = c.makeTransaction(owner: "Added")
        try added.register((any Greeter).self, name: "fr", instance: French())
        try await c.commit([removal, replacement, added], verify: false)
        #expect(c.generation == before + 1)
        #expect(try c.resolve((any Store).self).label == "new")
        #expect(try c.resolve((any Greeter).self, name: "fr").greet() == "bonjour")
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        #expect(c.registrations(owner: "Old").count == 1)
    }

    @Test func aResolverNeverSeesTheOldStorageGoneAndTheNewOneMissing() async throws {
        let c = Container()
        try c.register((any Store).self, owner: "S", instance: MemoryStore("g0"))
        let misses = Calls()
        let stop = Calls()
        let reader = Task.detached {
            while stop.count == 0 {
                if (try? c.resolve((any Store).self)) == nil { misses.hit() }
            }
        }
        for i in 1...200 {
            let removal = c.makeTransaction(owner: "S")
            removal.unregisterAll()
            let next = c.makeTransaction(owner: "S")
            try next.register((any Store).self, instance: MemoryStore("g\(i)"))
            try await c.commit([removal, next], verify: true)
        }
        stop.hit()
        await reader.value
        #expect(misses.count == 0)
        #expect(try c.resolve((any Store).self).label == "g200")
    }

    @Test func verify_buildsEverySingleton_andAFailingFactoryPublishesNothing() async throws {
        let c = Container()
        try c.register((any Store).self, owner: "S", instance: MemoryStore("old"))
        let before = c.generation
        let journal = Journal()
        let removal = c.makeTransaction(owner: "S")
        removal.unregisterAll()
        let next = c.makeTransaction(owner: "S")
        try next.worker("W", journal: journal)
        try next.register((any Store).self) { _ -> any Store in throw Boom(reason: "no bucket configured") }
        let error = await #expect(throws: PlugboardError.self) { try await c.commit([removal, next], verify: true) }
        #expect(error?.code == .factoryFailed)
        #expect(c.generation == before)
        #expect(try c.resolve((any Store).self).label == "old")
        // Every build comes before any start: the managed worker never started.
        #expect(journal.entries == [])
    }

    @Test func withoutVerify_aFailingFactoryWaitsForTheFirstResolve() async throws {
        let c = Container()
        let tx = c.makeTransaction(owner: "S")
        try tx.register((any Store).self) { _ -> any Store in throw Boom(reason: "lazy") }
        try await c.commit([tx], verify: false)
        #expect(throws: PlugboardError.self) { try c.resolve((any Store).self) }
    }

    @Test func aFailingHealthCheck_rollsBack_andStopsWhatStarted() async throws {
        let c = Container()
        let journal = Journal()
        try c.register((any Store).self, owner: "S", instance: MemoryStore("old"))
        let before = c.generation
        let removal = c.makeTransaction(owner: "S")
        removal.unregisterAll()
        let next = c.makeTransaction(owner: "S")
        try next.worker("W", journal: journal)
        try next.register((any Store).self) { _ in CheckedStore("new", healthy: false, journal: journal) }
        let error = await #expect(throws: PlugboardError.self) { try await c.commit([removal, next], verify: true) }
        #expect(error?.code == .healthCheckFailed)
        #expect(error?.message.contains("new cannot reach its bucket") == true)
        #expect(error?.message.contains("plugin \"S\"") == true)
        #expect(journal.entries == ["start W", "check new", "stop W"])
        #expect(c.generation == before)
        #expect(try c.resolve((any Store).self).label == "old")
    }

    @Test func aPassingHealthCheck_publishes_andServicesWithoutOneAreNotChecked() async throws {
        let c = Container()
        let journal = Journal()
        let tx = c.makeTransaction(owner: "S")
        try tx.register((any Store).self) { _ in CheckedStore("new", healthy: true, journal: journal) }
        try tx.register((any Greeter).self, instance: English())
        try await c.commit([tx], verify: true)
        #expect(journal.entries == ["check new"])
        #expect(try c.resolve((any Store).self).label == "new")
    }

    @Test func forceStopRetired_stopsADrainingServiceWithALeaseStillOpen() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "P") { tx in try tx.worker("old", journal: journal) }
        let lease = c.lease()
        try await c.transaction(owner: "P") { tx in
            try tx.worker("new", journal: journal)
            tx.unregister((any Worker).self, name: "old")
        }
        let published = c.generation
        await c.awaitPendingStops()
        #expect(journal.entries == ["start old", "start new"])
        #expect(c.retiredServicesWaiting(through: published) == 1)
        #expect(c.outstandingLeases()[lease.generation] == 1)
        #expect(await c.forceStopRetired(through: published) == 1)
        #expect(journal.entries == ["start old", "start new", "stop old"])
        #expect(c.retiredServicesWaiting(through: published) == 0)
        // The lease ends later; nothing is stopped twice.
        lease.release()
        await c.awaitPendingStops()
        #expect(journal.entries == ["start old", "start new", "stop old"])
        #expect(await c.forceStopRetired(through: published) == 0)
    }
}
