import PlugboardAPI
import Testing

@Suite("Ranking, replace and unregister")
struct RankingTests {
    @Test func highestRankWins_whateverTheRegistrationOrder() throws {
        let c = Container()
        try c.register((any Greeter).self, rank: 1, owner: "a") { _ in English() }
        try c.register((any Greeter).self, rank: 7, owner: "b") { _ in German() }
        try c.register((any Greeter).self, rank: 3, owner: "c") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "hallo")
    }

    @Test func equalRanks_goToTheEarlierRegistration() throws {
        let c = Container()
        try c.register((any Greeter).self, rank: 5, owner: "first") { _ in French() }
        try c.register((any Greeter).self, rank: 5, owner: "second") { _ in English() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
        #expect(try c.resolveAll((any Greeter).self).map { $0.greet() } == ["bonjour", "hello"])
    }

    @Test func aBetterProviderRegisteredLater_takesOverAtOnce() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "host") { _ in English() }
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        try c.register((any Greeter).self, rank: 1, owner: "plugin") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
    }

    @Test func sameKeyTwiceBySameOwner_isADuplicateRegistration() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let generation = c.generation
        let error = #expect(throws: PlugboardError.self) {
            try c.register((any Greeter).self, owner: "p") { _ in French() }
        }
        #expect(error?.code == .duplicateRegistration)
        #expect(error?.message.contains("p") == true)
        #expect(error?.message.contains("PlugboardAPITests.Greeter") == true)
        #expect(c.generation == generation)
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func sameKeyTwiceBySameOwner_withAnInstance_isADuplicateRegistration() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p", instance: English())
        let error = #expect(throws: PlugboardError.self) {
            try c.register((any Greeter).self, owner: "p", instance: French())
        }
        #expect(error?.code == .duplicateRegistration)
    }

    @Test func sameKeyByTwoOwners_orUnderTwoNames_isNoDuplicate() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "a") { _ in English() }
        try c.register((any Greeter).self, owner: "b") { _ in French() }
        try c.register((any Greeter).self, name: "other", owner: "a") { _ in German() }
        #expect(c.registrations().count == 3)
    }

    @Test func replace_swapsTheOwnersProvider() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        _ = try c.resolve((any Greeter).self)
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
        #expect(c.registrations().count == 1)
        try c.replace((any Greeter).self, owner: "p", instance: German())
        #expect(try c.resolve((any Greeter).self).greet() == "hallo")
        #expect(c.registrations().count == 1)
    }

    @Test func replace_withoutAnEarlierRegistration_registers() throws {
        let c = Container()
        try c.replace((any Greeter).self, owner: "p") { _ in English() }
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func replace_leavesOtherOwnersProvidersAlone() throws {
        let c = Container()
        try c.register((any Greeter).self, rank: 10, owner: "winner") { _ in German() }
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "hallo")
        #expect(try c.resolveAll((any Greeter).self).map { $0.greet() } == ["hallo", "bonjour"])
    }

    @Test func unregisteringTheWinner_letsTheNextBestProviderWin() throws {
        let c = Container()
        try c.register((any Greeter).self, rank: 1, owner: "a") { _ in English() }
        try c.register((any Greeter).self, rank: 2, owner: "b") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
        try c.unregister((any Greeter).self, owner: "b")
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func unregister_ofAnotherOwnersRegistration_isNotRegistered() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "a") { _ in English() }
        let error = #expect(throws: PlugboardError.self) {
            try c.unregister((any Greeter).self, owner: "b")
        }
        #expect(error?.code == .notRegistered)
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func unregister_ofANamedKey_leavesTheUnnamedOne() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "a") { _ in English() }
        try c.register((any Greeter).self, name: "x", owner: "a") { _ in French() }
        try c.unregister((any Greeter).self, name: "x", owner: "a")
        #expect(!c.isRegistered((any Greeter).self, name: "x"))
        #expect(c.isRegistered((any Greeter).self))
    }

    @Test func unregisterAll_removesEverythingOfOneOwner_inOneGeneration() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "plugin") { _ in French() }
        try c.register((any Greeter).self, name: "x", owner: "plugin") { _ in French() }
        try c.register((any Store).self, owner: "plugin") { _ in MemoryStore() }
        try c.register((any Greeter).self, owner: "host") { _ in English() }
        let before = c.generation
        #expect(c.unregisterAll(owner: "plugin") == 3)
        #expect(c.generation == before + 1)
        #expect(c.registrations().map(\.owner) == ["host"])
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        #expect(!c.isRegistered((any Store).self))
    }

    @Test func unregisterAll_ofAnOwnerWithNothing_changesNothing() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        let before = c.generation
        #expect(c.unregisterAll(owner: "nobody") == 0)
        #expect(c.generation == before)
    }

    @Test func anOwnerMayRegisterAgain_afterUnregistering() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.unregister((any Greeter).self, owner: "p")
        try c.register((any Greeter).self, owner: "p") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
    }
}

@Suite("Replacing keeps the place")
struct ReplacePlaceTests {
    @Test func aReplacedProvider_keepsItsPlaceAmongEqualRanks() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "first") { _ in English() }
        try c.register((any Greeter).self, owner: "second") { _ in German() }
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        try c.replace((any Greeter).self, owner: "first") { _ in French() }
        #expect(try c.resolve((any Greeter).self).greet() == "bonjour")
    }
}
