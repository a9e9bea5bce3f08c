import Foundation
import PlugboardAPI
import Testing

@Suite("Introspection and environment")
struct IntrospectionTests {
    @Test func registrations_describeEveryField() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "formal", rank: 3, owner: "plugin-x", scope: .transient,
                       implementation: German.self) { _ in German() }
        let info = try #require(c.registrations().first)
        #expect(info.service == "PlugboardAPITests.Greeter")
        #expect(info.name == "formal")
        #expect(info.rank == 3)
        #expect(info.scope == .transient)
        #expect(info.owner == "plugin-x")
        #expect(info.implementation == "PlugboardAPITests.German")
        #expect(info.generation == c.generation)
        #expect(info.isActive)
        #expect(!info.isManaged)
    }

    @Test func implementation_isLearnedWhenASingletonIsFirstBuilt() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in French() }
        #expect(c.registrations().first?.implementation == nil)
        _ = try c.resolve((any Greeter).self)
        #expect(c.registrations().first?.implementation == "PlugboardAPITests.French")
    }

    @Test func implementation_ofAnInstance_isItsType() throws {
        let c = Container()
        try c.register((any Store).self, instance: MemoryStore())
        #expect(c.registrations().first?.implementation == "PlugboardAPITests.MemoryStore")
        #expect(c.registrations().first?.scope == .instance)
    }

    @Test func registrations_markOnlyTheBestProviderActive_andListItFirst() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "low") { _ in English() }
        try c.register((any Greeter).self, rank: 2, owner: "high") { _ in French() }
        let infos = c.registrations()
        #expect(infos.map(\.owner) == ["high", "low"])
        #expect(infos.map(\.isActive) == [true, false])
    }

    @Test func registrations_reportTheGenerationThatPublishedEach() async throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        let first = c.generation
        try await c.transaction(owner: "p") { tx in
            try tx.register((any Store).self) { _ in MemoryStore() }
        }
        let byService = Dictionary(uniqueKeysWithValues: c.registrations().map { ($0.service, $0.generation) })
        #expect(byService["PlugboardAPITests.Greeter"] == first)
        #expect(byService["PlugboardAPITests.Store"] == first + 1)
    }

    @Test func registrations_flagManagedServices() async throws {
        let c = Container()
        try await c.transaction(owner: "p") { tx in try tx.worker("W", journal: Journal()) }
        let info = try #require(c.registrations().first)
        #expect(info.isManaged)
        #expect(info.implementation == "PlugboardAPITests.JournalWorker")
        await c.shutdown()
    }

    @Test func registrations_doNotListWithdrawnOnes() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.unregister((any Greeter).self, owner: "p")
        _ = c.handle((any Store).self)  // a handle on an unknown key adds no registration
        #expect(c.registrations().isEmpty)
    }

    @Test func registrationInfo_roundTripsThroughJSON_withTheScopeByName() throws {
        let c = Container()
        try c.register((any Greeter).self, scope: .weak) { _ in English() }
        let info = try #require(c.registrations().first)
        let data = try JSONEncoder().encode(info)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["scope"] as? String == "weak")
        #expect(json["service"] as? String == "PlugboardAPITests.Greeter")
        #expect(try JSONDecoder().decode(RegistrationInfo.self, from: data) == info)
    }

    @Test func generation_startsAtZero_andGrowsByOnePerChange() throws {
        let c = Container()
        #expect(c.generation == 0)
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        #expect(c.generation == 1)
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(c.generation == 2)
        try c.unregister((any Greeter).self, owner: "p")
        #expect(c.generation == 3)
        _ = try? c.unregister((any Greeter).self, owner: "p")
        #expect(c.generation == 3)
    }

    @Test(arguments: Environment.all)
    func environment_isVisibleToTheHostFactoriesAndOverlays(environment: Environment) throws {
        let c = Container(environment: environment)
        #expect(c.environment == environment)
        #expect(c.overlay().environment == environment)
        try c.register(String.self, scope: .transient) { r in r.environment.name }
        #expect(try c.resolve(String.self) == environment.name)
        #expect(Environment(environment.name) == environment)
    }

    @Test func environment_defaultsToDevelopment_andRejectsUnknownNames() throws {
        #expect(Container().environment == .development)
        #expect(Environment("qa") == nil)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Environment].self, from: Data(#"["qa"]"#.utf8))
        }
        #expect(try JSONDecoder().decode([Environment].self, from: Data(#"["production"]"#.utf8)) == [.production])
    }
}
