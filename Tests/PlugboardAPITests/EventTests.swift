import PlugboardAPI
import Testing

@Suite("Events")
struct EventTests {
    @Test func register_sendsRegistered_withTheNewGeneration() async throws {
        let c = Container()
        let events = c.events()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let got = await nextEvents(events, 1)
        #expect(got.map(\.kind) == [.registered])
        #expect(got.first?.generation == c.generation)
        #expect(got.first?.registration.service == "PlugboardAPITests.Greeter")
        #expect(got.first?.registration.owner == "p")
    }

    @Test func replace_sendsUnregisteringForTheOldOne_thenReplacedForTheNewOne() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p", instance: English())
        let events = c.events()
        try c.replace((any Greeter).self, owner: "p", instance: French())
        let got = await nextEvents(events, 2)
        #expect(got.map(\.kind) == [.unregistering, .replaced])
        #expect(got.map(\.registration.implementation) == ["PlugboardAPITests.English", "PlugboardAPITests.French"])
        #expect(Set(got.map(\.generation)) == [c.generation])
    }

    @Test func unregistering_isSentWhileTheOldServiceIsStillTheActiveOne() async throws {
        // "Before the old one goes away": the event describes the registration as it was
        // before the generation without it was published.
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let before = c.generation
        let events = c.events()
        try c.unregister((any Greeter).self, owner: "p")
        let got = await nextEvents(events, 1)
        #expect(got.map(\.kind) == [.unregistering])
        #expect(got.first?.registration.isActive == true)
        #expect(got.first?.registration.generation == before)
        #expect(got.first?.generation == before + 1)
    }

    @Test func transaction_sendsUnregisteringEventsFirst_thenRegistrations_allOfOneGeneration() async throws {
        let c = Container()
        try c.register((any Store).self, owner: "p") { _ in MemoryStore() }
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let events = c.events()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Greeter).self, name: "new") { _ in German() }
            tx.unregister((any Store).self)
            try tx.replace((any Greeter).self) { _ in French() }
        }
        let got = await nextEvents(events, 4)
        #expect(got.map(\.kind) == [.unregistering, .unregistering, .registered, .replaced])
        #expect(Set(got.map(\.generation)) == [c.generation])
    }

    @Test func managedServiceStop_sendsStopped_afterUnregistering() async throws {
        let c = Container()
        let journal = Journal()
        let events = c.events()
        try await c.transaction(owner: "p") { tx in try tx.worker("W", journal: journal) }
        c.unregisterAll(owner: "p")
        let got = await nextEvents(events, 3)
        #expect(got.map(\.kind) == [.registered, .unregistering, .stopped])
        #expect(got.last?.registration.name == "W")
        #expect(journal.entries == ["start W", "stop W"])
    }

    @Test func stopped_isNotSentWhileALeaseHoldsTheGeneration() async throws {
        let c = Container()
        let journal = Journal()
        try await c.transaction(owner: "p") { tx in try tx.worker("W", journal: journal) }
        let events = c.events()
        let lease = c.lease()
        c.unregisterAll(owner: "p")
        #expect(await nextEvents(events, 1).map(\.kind) == [.unregistering])
        await c.awaitPendingStops()
        #expect(journal.entries(startingWith: "stop").isEmpty)
        lease.release()
        #expect(await nextEvents(events, 1).map(\.kind) == [.stopped])
        #expect(journal.entries(startingWith: "stop") == ["stop W"])
    }

    @Test func everySubscriber_getsEveryEvent() async throws {
        let c = Container()
        let a = c.events()
        let b = c.events()
        try c.register((any Greeter).self) { _ in English() }
        try c.unregister((any Greeter).self)
        #expect(await nextEvents(a, 2).map(\.kind) == [.registered, .unregistering])
        #expect(await nextEvents(b, 2).map(\.kind) == [.registered, .unregistering])
    }

    @Test func failedChanges_sendNoEvents() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let events = c.events()
        _ = try? c.register((any Greeter).self, owner: "p") { _ in French() }
        _ = try? await c.transaction(owner: "q") { tx in
            try tx.register((any Store).self) { _ in MemoryStore() }
            throw Boom(reason: "abort")
        }
        try c.register(Int.self, instance: 1)
        let got = await nextEvents(events, 1)
        #expect(got.map(\.registration.service) == ["Swift.Int"])
    }

    @Test func shutdown_endsEveryEventStream() async throws {
        let c = Container()
        let events = c.events()
        try c.register((any Greeter).self) { _ in English() }
        let ended = await finishes(within: 60) { await c.shutdown() }
        #expect(ended, "shutdown hung while ending the event streams")
        guard ended else { return }
        var kinds: [ContainerEvent.Kind] = []
        for await event in events { kinds.append(event.kind) }  // ends: the stream finished
        #expect(kinds == [.registered])
        var late = c.events().makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test func cancellingASubscriber_doesNotDisturbTheContainer() async throws {
        let c = Container()
        let reader = Task {
            var count = 0
            for await _ in c.events() { count += 1 }
            return count
        }
        try c.register((any Greeter).self) { _ in English() }
        reader.cancel()
        _ = await reader.value
        try c.register((any Store).self) { _ in MemoryStore() }
        let ended = await finishes(within: 60) { await c.shutdown() }
        #expect(ended)
    }
}

@Suite("Events of unusual transactions")
struct UnusualTransactionEventTests {
    @Test func rolledBackStart_announcesNothing_notEvenStopped() async throws {
        // The services of a failed transaction were never registered, so subscribers
        // must not hear that they stopped.
        let c = Container()
        let journal = Journal()
        let events = c.events()
        _ = try? await c.transaction(owner: "p") { tx in
            try tx.worker("Ok", journal: journal)
            try tx.worker("Bad", journal: journal, dependsOn: ["Ok"], failsToStart: true)
        }
        #expect(journal.entries == ["start Ok", "start Bad", "stop Ok"])
        try c.register(Int.self, instance: 1)
        let got = await nextEvents(events, 1)
        #expect(got.map(\.kind) == [.registered])
        #expect(got.map(\.registration.service) == ["Swift.Int"])
    }

    @Test func registerThenUnregisterInOneTransaction_leavesNothing_andAnnouncesNothing() async throws {
        let c = Container()
        let events = c.events()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Greeter).self) { _ in English() }
            tx.unregister((any Greeter).self)
        }
        #expect(c.registrations().isEmpty)
        try c.register(Int.self, instance: 1)
        let got = await nextEvents(events, 1)
        #expect(got.map(\.registration.service) == ["Swift.Int"])
    }

    @Test func replacingTwiceInOneTransaction_announcesOneReplacement() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p", instance: English())
        let events = c.events()
        try await c.transaction(owner: "p") { tx in
            try tx.replace((any Greeter).self, instance: French())
            try tx.replace((any Greeter).self, instance: German())
        }
        #expect(try c.resolve((any Greeter).self).greet() == "hallo")
        #expect(c.registrations().count == 1)
        try c.register(Int.self, instance: 1)
        let got = await nextEvents(events, 3)
        #expect(got.map(\.kind) == [.unregistering, .replaced, .registered])
        #expect(got.map(\.registration.implementation)
                == ["PlugboardAPITests.English", "PlugboardAPITests.German", "Swift.Int"])
    }

    @Test func registerThenReplaceInOneTransaction_announcesARegistration() async throws {
        let c = Container()
        let events = c.events()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Greeter).self, instance: English())
            try tx.replace((any Greeter).self, instance: French())
        }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
        let got = await nextEvents(events, 1)
        #expect(got.map(\.kind) == [.registered])
        #expect(got.map(\.registration.implementation) == ["PlugboardAPITests.French"])
    }

    @Test func managedServiceRegisteredAndWithdrawnInOneTransaction_isStoppedAgain() async throws {
        let c = Container()
        let journal = Journal()
        let events = c.events()
        let before = c.generation
        try await c.transaction(owner: "p") { tx in
            try tx.worker("Short", journal: journal)
            tx.unregister((any Worker).self, name: "Short")
        }
        await c.awaitPendingStops()
        #expect(c.registrations().isEmpty)
        #expect(c.generation == before)
        #expect(journal.entries == ["start Short", "stop Short"])
        try c.register(Int.self, instance: 1)
        #expect(await nextEvents(events, 1).map(\.registration.service) == ["Swift.Int"])
    }
}
