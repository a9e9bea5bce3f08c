import PlugboardAPI
import Testing

@Suite("Lifecycle of managed services")
struct LifecycleTests {
    @Test func managedServices_startDependenciesFirst_whateverTheDeclarationOrder() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in
            // Declared dependents first: C needs A, A needs B.
            try tx.worker("C", journal: journal, dependsOn: ["A"])
            try tx.worker("A", journal: journal, dependsOn: ["B"])
            try tx.worker("B", journal: journal)
        }
        #expect(journal.entries == ["start B", "start A", "start C"])
        let a = try c.resolve((any Worker).self, name: "A") as? JournalWorker
        #expect(a?.dependencies.map(\.name) == ["B"])
        #expect(a?.startCount == 1)
    }

    @Test func managedServices_areStartedBeforeTheyArePublished() async throws {
        let c = Container()
        let journal = Journal()
        let generationAtStart = Collected<UInt64>()
        final class Probe: ManagedService, Greeter {
            let onStart: @Sendable () -> Void
            init(onStart: @escaping @Sendable () -> Void) { self.onStart = onStart }
            func start() async throws { onStart() }
            func stop() async {}
            func greet() -> String { "probe" }
        }
        let before = c.generation
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Greeter).self, managed: true) { _ in
                Probe { [c] in
                    generationAtStart.append(c.generation)
                    journal.record(c.isRegistered((any Greeter).self) ? "visible" : "invisible")
                }
            }
        }
        #expect(generationAtStart.all == [before])
        #expect(journal.entries == ["invisible"])
        #expect(try c.resolve((any Greeter).self).greet() == "probe")
    }

    @Test func managedFactory_seesTheTransactionsOwnRegistrations() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, name: "M", managed: true) { r in
                let store = try r.resolve((any Store).self)
                return JournalWorker("M uses \(store.label)", journal: journal)
            }
            try tx.register((any Store).self) { _ in MemoryStore("staged") }
        }
        #expect(journal.entries == ["start M uses staged"])
    }

    @Test func aServiceFailingToStart_stopsTheOnesStarted_andRollsBack() async throws {
        let c = Container()
        let journal = Journal()
        try c.register((any Greeter).self, owner: "host") { _ in English() }
        let before = c.generation
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.worker("Bad", journal: journal, dependsOn: ["Y"], failsToStart: true)
                try tx.worker("Y", journal: journal, dependsOn: ["X"])
                try tx.worker("X", journal: journal)
                try tx.register((any Store).self) { _ in MemoryStore() }
            }
        }
        #expect(error?.code == .startFailed)
        #expect(error?.message.contains("Bad") == true)
        #expect(error?.underlying as? Boom == Boom(reason: "Bad refuses to start"))
        #expect(journal.entries == ["start X", "start Y", "start Bad", "stop Y", "stop X"])
        #expect(c.generation == before)
        for name in ["Bad", "X", "Y"] {
            let miss = #expect(throws: PlugboardError.self) { try c.resolve((any Worker).self, name: name) }
            #expect(miss?.code == .notRegistered)
        }
        #expect(!c.isRegistered((any Store).self))
        #expect(c.registrations().map(\.owner) == ["host"])
    }

    @Test func aManagedFactoryThatThrows_startsNothing_andRollsBack() async throws {
        let c = Container()
        let journal = Journal()
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.worker("Fine", journal: journal)
                try tx.register((any Worker).self, name: "Broken", managed: true) { _ in
                    throw Boom(reason: "no config")
                }
            }
        }
        #expect(error?.code == .factoryFailed)
        #expect(c.registrations().isEmpty)
        #expect(journal.entries(startingWith: "stop").count == journal.entries(startingWith: "start").count)
    }

    @Test func managedFactoryReturningANonManagedService_isATypeMismatch() async throws {
        let c = Container()
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.register((any Greeter).self, managed: true) { _ in English() }
            }
        }
        #expect(error?.code == .typeMismatch)
        #expect(c.registrations().isEmpty)
    }

    @Test func managedInstanceThatIsNotAManagedService_isRefusedAtRegistration() throws {
        let tx = Container().makeTransaction()
        let error = #expect(throws: PlugboardError.self) {
            try tx.register((any Greeter).self, managed: true, instance: English())
        }
        #expect(error?.code == .typeMismatch)
    }

    @Test func managedTransient_isAnInvalidRegistration() throws {
        let tx = Container().makeTransaction()
        let error = #expect(throws: PlugboardError.self) {
            try tx.register((any Worker).self, scope: .transient, managed: true) { _ in
                JournalWorker("T", journal: Journal())
            }
        }
        #expect(error?.code == .invalidRegistration)
    }

    @Test func managedInstance_isStartedAndStopped() async throws {
        let c = Container()
        let journal = Journal()
        let worker = JournalWorker("I", journal: journal)
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true, instance: worker)
        }
        #expect(journal.entries == ["start I"])
        c.unregisterAll(owner: "p")
        await c.awaitPendingStops()
        #expect(journal.entries == ["start I", "stop I"])
    }

    @Test func unregisteredManagedServices_areStoppedInReverseStartOrder() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in
            try tx.worker("Top", journal: journal, dependsOn: ["Mid"])
            try tx.worker("Mid", journal: journal, dependsOn: ["Base"])
            try tx.worker("Base", journal: journal)
        }
        #expect(c.unregisterAll(owner: "p") == 3)
        await c.awaitPendingStops()
        #expect(journal.entries(startingWith: "stop") == ["stop Top", "stop Mid", "stop Base"])
    }

    @Test func replacedManagedService_isStoppedAfterItsReplacementStarted() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true) { _ in JournalWorker("v1", journal: journal) }
        }
        try await c.transaction(owner: "p") { tx in
            try tx.replace((any Worker).self, managed: true) { _ in JournalWorker("v2", journal: journal) }
        }
        await c.awaitPendingStops()
        #expect(journal.entries == ["start v1", "start v2", "stop v1"])
        let current = try c.resolve((any Worker).self)
        #expect(current.name == "v2")
        #expect(current.stopCount == 0)
    }

    @Test func replacingAManagedServiceOutsideATransaction_stillStopsTheOldOne() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Worker).self, managed: true) { _ in JournalWorker("managed", journal: journal) }
        }
        try c.replace((any Worker).self, owner: "p") { _ in JournalWorker("plain", journal: journal) }
        await c.awaitPendingStops()
        #expect(journal.entries == ["start managed", "stop managed"])
        #expect(try c.resolve((any Worker).self).name == "plain")
    }

    @Test func anUnmanagedReplacement_isNeverStartedOrStopped() async throws {
        let c = Container()
        let journal = Journal()
        try c.register((any Worker).self, owner: "p") { _ in JournalWorker("plain", journal: journal) }
        _ = try c.resolve((any Worker).self)
        try c.unregister((any Worker).self, owner: "p")
        await c.awaitPendingStops()
        await c.shutdown()
        #expect(journal.entries.isEmpty)
    }

    @Test func shutdown_stopsEveryManagedServiceInReverseStartOrder_andRefusesChanges() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p1") { tx in
            try tx.worker("A", journal: journal)
            try tx.worker("B", journal: journal, dependsOn: ["A"])
        }
        try await c.transaction(owner: "p2") { tx in try tx.worker("C", journal: journal) }
        await c.shutdown()
        #expect(journal.entries == ["start A", "start B", "start C", "stop C", "stop B", "stop A"])
        let error = #expect(throws: PlugboardError.self) {
            try c.register((any Greeter).self) { _ in English() }
        }
        #expect(error?.code == .shutDown)
        let txError = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p3") { tx in try tx.worker("D", journal: journal) }
        }
        #expect(txError?.code == .shutDown)
        #expect(!journal.entries.contains("start D"))
        // Resolving still works after shutdown.
        #expect(try c.resolve((any Worker).self, name: "A").name == "A")
    }

    @Test func shutdownTwice_stopsNothingTwice() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in try tx.worker("A", journal: journal) }
        await c.shutdown()
        await c.shutdown()
        #expect(journal.entries == ["start A", "stop A"])
    }

    @Test func shutdown_stopsEachServiceOnce_evenIfItWasAlreadyRetired() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in try tx.worker("A", journal: journal) }
        let lease = c.lease()
        c.unregisterAll(owner: "p")  // retired, but the lease holds its stop back
        await c.shutdown()
        lease.release()
        await c.awaitPendingStops()
        #expect(journal.entries == ["start A", "stop A"])
    }
}
