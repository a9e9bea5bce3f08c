import PlugboardAPI
import Testing

@Suite("Transactions")
struct TransactionTests {
    @Test func transaction_publishesEverythingAsExactlyOneGeneration() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "old") { _ in English() }
        let before = c.generation
        try await c.transaction(owner: "plugin", rank: 1) { tx in
            try tx.register((any Greeter).self) { _ in French() }
            try tx.register((any Store).self, scope: .transient) { _ in MemoryStore() }
            try tx.register((any Greeter).self, name: "formal", instance: German())
        }
        #expect(c.generation == before + 1)
        #expect(Set(c.registrations().filter { $0.owner == "plugin" }.map(\.generation)) == [before + 1])
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
        #expect(try c.resolve((any Store).self).label == "memory")
        #expect(try c.resolve((any Greeter).self, name: "formal").greet() == "hallo")
    }

    @Test func transaction_returnsTheBodysResult() async throws {
        let c = Container()
        let answer = try await c.transaction(owner: "p") { tx -> Int in
            try tx.register(Int.self, instance: 42)
            return 7
        }
        #expect(answer == 7)
        #expect(try c.resolve(Int.self) == 42)
    }

    @Test func makeTransaction_showsNothingUntilCommit() async throws {
        let c = Container()
        let tx = c.makeTransaction(owner: "p")
        try tx.register((any Greeter).self) { _ in English() }
        try tx.register((any Store).self) { _ in MemoryStore() }
        let before = c.generation
        #expect(!c.isRegistered((any Greeter).self))
        #expect(c.registrations().isEmpty)
        try await c.commit(tx)
        #expect(c.generation == before + 1)
        #expect(c.isRegistered((any Greeter).self))
        #expect(c.isRegistered((any Store).self))
    }

    @Test func throwInsideTheBody_rollsEverythingBack() async throws {
        let c = Container()
        let before = c.generation
        await #expect(throws: Boom.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.register((any Greeter).self) { _ in English() }
                try tx.register((any Store).self) { _ in MemoryStore() }
                throw Boom(reason: "changed my mind")
            }
        }
        #expect(c.generation == before)
        #expect(c.registrations().isEmpty)
        #expect(!c.isRegistered((any Greeter).self))
    }

    @Test func duplicateInsideTheTransaction_rollsEverythingBack() async throws {
        let c = Container()
        try c.register((any Store).self, owner: "p") { _ in MemoryStore("kept") }
        let before = c.generation
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.replace((any Store).self) { _ in MemoryStore("replacement") }
                try tx.register((any Greeter).self) { _ in English() }
                try tx.register((any Greeter).self) { _ in French() }
            }
        }
        #expect(error?.code == .duplicateRegistration)
        #expect(c.generation == before)
        #expect(!c.isRegistered((any Greeter).self))
        #expect(try c.resolve((any Store).self).label == "kept")
    }

    @Test func duplicateOfAnEarlierRegistration_rollsBackTheWholeTransaction() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let before = c.generation
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.register((any Store).self) { _ in MemoryStore() }
                try tx.register((any Greeter).self) { _ in French() }
            }
        }
        #expect(error?.code == .duplicateRegistration)
        #expect(c.generation == before)
        #expect(!c.isRegistered((any Store).self))
    }

    @Test func unregisteringWhatTheOwnerDoesNotHave_rollsBackTheWholeTransaction() async throws {
        let c = Container()
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.register((any Greeter).self) { _ in English() }
                tx.unregister((any Store).self)
            }
        }
        #expect(error?.code == .notRegistered)
        #expect(c.registrations().isEmpty)
    }

    @Test func transaction_mayUnregisterAndRegisterInOneGeneration() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.register((any Store).self, owner: "p") { _ in MemoryStore() }
        let before = c.generation
        try await c.transaction(owner: "p") { tx in
            tx.unregisterAll()
            try tx.register((any Greeter).self, name: "v2") { _ in French() }
        }
        #expect(c.generation == before + 1)
        #expect(c.registrations().map(\.name) == ["v2"])
    }

    @Test func emptyTransaction_publishesNoGeneration() async throws {
        let c = Container()
        let before = c.generation
        try await c.transaction(owner: "p") { _ in }
        #expect(c.generation == before)
    }

    @Test func transactionRank_isTheDefault_andARegistrationMayOverrideIt() async throws {
        let c = Container()
        try await c.transaction(owner: "p", rank: 4) { tx in
            try tx.register((any Greeter).self) { _ in English() }
            try tx.register((any Store).self, rank: 9) { _ in MemoryStore() }
        }
        let ranks = Dictionary(uniqueKeysWithValues: c.registrations().map { ($0.service, $0.rank) })
        #expect(ranks["PlugboardAPITests.Greeter"] == 4)
        #expect(ranks["PlugboardAPITests.Store"] == 9)
    }

    @Test func emptyName_isAnInvalidRegistration() throws {
        let c = Container()
        let tx = c.makeTransaction()
        let error = #expect(throws: PlugboardError.self) {
            try tx.register((any Greeter).self, name: "") { _ in English() }
        }
        #expect(error?.code == .invalidRegistration)
    }

    @Test func aCommittedTransaction_isEmptyAfterwards() async throws {
        let c = Container()
        let tx = c.makeTransaction(owner: "p")
        try tx.register((any Greeter).self) { _ in English() }
        try await c.commit(tx)
        let generation = c.generation
        try await c.commit(tx)  // nothing left to apply: no duplicate, no new generation
        #expect(c.generation == generation)
    }

    @Test func readerSeesAllOfATransactionOrNone_whileTransactionsCommit() async throws {
        // Two services always change together; a factory resolving both through its
        // resolver reads one generation, so it must always see matching versions.
        let c = Container()
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Greeter).self, instance: Parrot("0"))
            try tx.register((any Store).self, instance: MemoryStore("0"))
        }
        try c.register(String.self, owner: "reader", scope: .transient) { r in
            let g = try r.resolve((any Greeter).self).greet()
            let s = try r.resolve((any Store).self).label
            return "\(g)/\(s)"
        }
        let torn = Collected<String>()
        let done = Flag()
        let reader = Task.detached {
            var reads = 0
            while !done.isSet || reads == 0 {
                reads += 1
                guard let pair = try? c.resolve(String.self) else { torn.append("failed"); continue }
                let parts = pair.split(separator: "/")
                if parts.count != 2 || parts[0] != parts[1] { torn.append(pair) }
            }
            return reads
        }
        for version in 1...200 {
            try await c.transaction(owner: "p") { tx in
                try tx.replace((any Greeter).self, instance: Parrot("\(version)"))
                try tx.replace((any Store).self, instance: MemoryStore("\(version)"))
            }
        }
        done.set()
        let reads = await reader.value
        #expect(reads > 0)
        #expect(torn.all.isEmpty)
    }
}

@Suite("Transaction conflicts")
struct TransactionConflictTests {
    /// A managed service whose start waits until the test lets it go.
    final class GatedService: ManagedService, @unchecked Sendable {
        // @unchecked Sendable: the stream and continuation are themselves Sendable.
        let started: AsyncStream<Void>.Continuation
        let release: AsyncStream<Void>
        let stops = Collected<String>()
        init(started: AsyncStream<Void>.Continuation, release: AsyncStream<Void>) {
            self.started = started
            self.release = release
        }
        func start() async throws {
            started.yield()
            for await _ in release { return }
        }
        func stop() async { stops.append("stopped") }
    }

    @Test func aChangeCommittedWhileItsServicesStart_makesTheTransactionAConflict() async throws {
        let c = Container()
        let (startedStream, startedContinuation) = AsyncStream<Void>.makeStream()
        let (releaseStream, releaseContinuation) = AsyncStream<Void>.makeStream()
        let service = GatedService(started: startedContinuation, release: releaseStream)
        let commit = Task {
            try await c.transaction(owner: "p") { tx in
                try tx.register(GatedService.self, managed: true, instance: service)
            }
        }
        for await _ in startedStream { break }
        // Meanwhile the same owner registers the same key: the transaction no longer applies.
        try c.register(GatedService.self, owner: "p", instance: service)
        releaseContinuation.yield()
        let result = await commit.result
        let error = try #require(result.failure as? PlugboardError)
        #expect(error.code == .transactionConflict)
        #expect((error.underlying as? PlugboardError)?.code == .duplicateRegistration)
        #expect(service.stops.all == ["stopped"])
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
