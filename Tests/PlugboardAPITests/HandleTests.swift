import PlugboardAPI
import Testing

@Suite("Live handles")
struct HandleTests {
    @Test func current_givesTheBestProvider() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "a") { _ in English() }
        try c.register((any Greeter).self, rank: 1, owner: "b") { _ in French() }
        let handle = c.handle((any Greeter).self)
        #expect(try handle.current.greet() == "bonjour")
    }

    @Test func current_returnsTheReplacementAtOnce() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let handle = c.handle((any Greeter).self)
        #expect(try handle.current.greet() == "hello")
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try handle.current.greet() == "bonjour")
        try c.register((any Greeter).self, rank: 3, owner: "better", instance: German())
        #expect(try handle.current.greet() == "hallo")
    }

    @Test func current_throwsNotRegistered_afterTheLastProviderIsGone() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let handle = c.handle((any Greeter).self)
        _ = try handle.current
        try c.unregister((any Greeter).self, owner: "p")
        let error = #expect(throws: PlugboardError.self) { try handle.current }
        #expect(error?.code == .notRegistered)
    }

    @Test func handleMadeBeforeAnyRegistration_findsTheLaterOne() throws {
        let c = Container()
        let handle = c.handle((any Greeter).self)
        let named = c.handle((any Greeter).self, name: "n")
        #expect(throws: PlugboardError.self) { try handle.current }
        try c.register((any Greeter).self) { _ in English() }
        try c.register((any Greeter).self, name: "n") { _ in German() }
        #expect(try handle.current.greet() == "hello")
        #expect(try named.current.greet() == "hallo")
    }

    @Test func handleOnANamedKey_ignoresTheUnnamedProvider() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        try c.register((any Greeter).self, name: "formal", owner: "p") { _ in German() }
        let handle = c.handle((any Greeter).self, name: "formal")
        #expect(try handle.current.greet() == "hallo")
        try c.replace((any Greeter).self, name: "formal", owner: "p") { _ in Parrot("guten Tag") }
        #expect(try handle.current.greet() == "guten Tag")
    }

    @Test func current_ofATransient_buildsEachTime_andOfASingletonSharesIt() throws {
        let c = Container()
        try c.register((any Greeter).self, scope: .transient) { _ in English() }
        try c.register((any Store).self) { _ in MemoryStore() }
        let transient = c.handle((any Greeter).self)
        let singleton = c.handle((any Store).self)
        #expect(try transient.current as AnyObject !== transient.current as AnyObject)
        #expect(try singleton.current as AnyObject === singleton.current as AnyObject)
        #expect(try singleton.current as AnyObject === c.resolve((any Store).self) as AnyObject)
    }

    @Test func handle_worksOnEveryThread_andSeesAReplacementMadeOnAnother() async throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        let handle = c.handle((any Greeter).self)
        let before = Collected<String>()
        #expect(await onThreads(2) { _ in before.append((try? handle.current.greet()) ?? "failed") })
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        let after = Collected<String>()
        #expect(await onThreads(2) { _ in after.append((try? handle.current.greet()) ?? "failed") })
        #expect(before.all == ["hello", "hello"])
        #expect(after.all == ["bonjour", "bonjour"])
    }
}
