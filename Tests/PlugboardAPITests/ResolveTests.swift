import PlugboardAPI
import Testing

@Suite("Resolve")
struct ResolveTests {
    @Test func resolveByType_returnsTheRegisteredFactorysValue() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        let g = try c.resolve((any Greeter).self)
        #expect(g.greet() == "hello")
    }

    @Test func resolveByInferredType_returnsTheRegisteredValue() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in French() }
        let g: any Greeter = try c.resolve()
        #expect(g.greet() == "bonjour")
    }

    @Test func resolveOfARegisteredInstance_returnsThatInstance() throws {
        let c = Container()
        let english = English()
        try c.register((any Greeter).self, instance: english)
        let g: any Greeter = try c.resolve()
        #expect(g as AnyObject === english)
    }

    @Test func resolveOfAConcreteClassKey_works() throws {
        let c = Container()
        try c.register(MemoryStore.self) { _ in MemoryStore("concrete") }
        #expect(try c.resolve(MemoryStore.self).label == "concrete")
    }

    @Test func resolveOfAValueTypeKey_works() throws {
        let c = Container()
        try c.register(Int.self, instance: 42)
        try c.register(String.self, scope: .transient) { _ in "text" }
        #expect(try c.resolve(Int.self) == 42)
        let s: String = try c.resolve()
        #expect(s == "text")
    }

    @Test func resolveWithAName_returnsTheNamedProvider_andTheUnnamedOneStaysSeparate() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        #expect(try c.resolve((any Greeter).self, name: "formal").greet() == "hallo")
    }

    @Test func resolveWithAName_failsWhenOnlyTheUnnamedProviderExists() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        let error = #expect(throws: PlugboardError.self) {
            try c.resolve((any Greeter).self, name: "formal")
        }
        #expect(error?.code == .notRegistered)
    }

    @Test func resolveWithoutAName_failsWhenOnlyNamedProvidersExist() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        let error = #expect(throws: PlugboardError.self) {
            try c.resolve((any Greeter).self)
        }
        #expect(error?.code == .notRegistered)
    }

    @Test func factory_resolvesItsDependenciesThroughTheResolverItIsGiven() throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore("disk") }
        try c.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        let mailer: any Mailer = try c.resolve()
        #expect(mailer.store.label == "disk")
    }

    @Test func factory_resolvesNamedDependenciesAndAllProviders() throws {
        let c = Container()
        try c.register((any Store).self, name: "a") { _ in MemoryStore("a") }
        try c.register((any Greeter).self, owner: "p1") { _ in English() }
        try c.register((any Greeter).self, owner: "p2", instance: French())
        try c.register(String.self, scope: .transient) { r in
            let store = try r.resolve((any Store).self, name: "a")
            let all = try r.resolveAll((any Greeter).self)
            return ([store.label] + all.map { $0.greet() }).joined(separator: ",")
        }
        #expect(try c.resolve(String.self) == "a,hello,bonjour")
    }

    @Test func factory_mayThrow_andResolveReportsFactoryFailed() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in throw Boom(reason: "no greeting today") }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) }
        #expect(error?.code == .factoryFailed)
        #expect(error?.underlying as? Boom == Boom(reason: "no greeting today"))
    }

    @Test func factory_seesTheContainersEnvironment() throws {
        let c = Container(environment: .staging)
        try c.register(String.self, scope: .transient) { r in r.environment.name }
        #expect(try c.resolve(String.self) == "staging")
        #expect(c.environment == .staging)
    }

    @Test func factory_mayUseTheContainerItself_withoutDeadlock() async throws {
        // No lock may be held while a factory runs: a factory that reads, registers into
        // and resolves from the container that is building it must not deadlock.
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore() }
        try c.register((any Greeter).self) { [c] _ in
            _ = c.registrations()
            _ = c.generation
            _ = c.isRegistered((any Store).self)
            _ = c.handle((any Store).self)
            try c.register((any Store).self, name: "made-by-factory") { _ in MemoryStore("inner") }
            let inner = try c.resolve((any Store).self, name: "made-by-factory")
            try c.withLeaseSync { lease in _ = try lease.resolve((any Store).self) }
            return Parrot(inner.label)
        }
        let result = Collected<String>()
        let finished = await onThreads(1, timeout: 60) { _ in
            result.append((try? c.resolve((any Greeter).self).greet()) ?? "failed")
        }
        #expect(finished, "the factory deadlocked")
        #expect(result.all == ["inner"])
    }

    @Test func aFactoryNeedingLateResolution_keepsAHandle_thatFollowsSwaps() throws {
        final class Lazy: Sendable {
            let greeter: ServiceHandle<any Greeter>
            init(_ greeter: ServiceHandle<any Greeter>) { self.greeter = greeter }
            func greeting() throws -> String { try greeter.current.greet() }
        }
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.register(Lazy.self) { _ in Lazy(c.handle((any Greeter).self)) }
        let lazy = try c.resolve(Lazy.self)
        #expect(try lazy.greeting() == "hello")
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try lazy.greeting() == "bonjour")
    }

    @Test func aTransientBuiltThroughALease_getsItsDependenciesFromTheLeasedGeneration() throws {
        struct Pair { let greeter: any Greeter }
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        try c.register(Pair.self, scope: .transient) { r in Pair(greeter: try r.resolve()) }
        let lease = c.lease()
        defer { lease.release() }
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try lease.resolve(Pair.self).greeter.greet() == "hello")
        #expect(try c.resolve(Pair.self).greeter.greet() == "bonjour")
    }

    @Test func resolveAll_returnsEveryProviderBestFirst() throws {
        let c = Container()
        try c.register((any Greeter).self, rank: 0, owner: "low") { _ in English() }
        try c.register((any Greeter).self, rank: 10, owner: "high") { _ in German() }
        try c.register((any Greeter).self, rank: 5, owner: "mid", instance: French())
        let all = try c.resolveAll((any Greeter).self)
        #expect(all.map { $0.greet() } == ["hallo", "bonjour", "hello"])
    }

    @Test func resolveAll_withANameReturnsOnlyThatNamesProviders() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "a") { _ in English() }
        try c.register((any Greeter).self, name: "x", owner: "a") { _ in French() }
        try c.register((any Greeter).self, name: "x", rank: 1, owner: "b") { _ in German() }
        #expect(try c.resolveAll((any Greeter).self, name: "x").map { $0.greet() } == ["hallo", "bonjour"])
        let inferred: [any Greeter] = try c.resolveAll()
        #expect(inferred.map { $0.greet() } == ["hello"])
    }

    @Test func resolveAll_ofAnUnknownService_isEmpty() throws {
        let c = Container()
        #expect(try c.resolveAll((any Greeter).self).isEmpty)
    }

    @Test func isRegistered_tellsWhetherAProviderExists() throws {
        let c = Container()
        #expect(!c.isRegistered((any Greeter).self))
        try c.register((any Greeter).self, name: "n") { _ in English() }
        #expect(c.isRegistered((any Greeter).self, name: "n"))
        #expect(!c.isRegistered((any Greeter).self))
    }

    @Test func resolveAfterUnregister_failsWithNotRegistered() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        _ = try c.resolve((any Greeter).self)
        try c.unregister((any Greeter).self)
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) }
        #expect(error?.code == .notRegistered)
    }
}

extension Container {
    /// A lease for synchronous code (the factory test), released before returning.
    func withLeaseSync<R>(_ body: (Lease) throws -> R) rethrows -> R {
        let lease = lease()
        defer { lease.release() }
        return try body(lease)
    }
}
