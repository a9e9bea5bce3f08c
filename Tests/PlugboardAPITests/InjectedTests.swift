import PlugboardAPI
import Testing

@Suite("Injected and Injector")
struct InjectedTests {
    @Test func injected_isNilWhileNothingProvidesTheService_andResolveSaysWhy() throws {
        let c = Container()
        @Injected(from: c) var greeter: (any Greeter)?
        #expect(greeter == nil)
        let error = #expect(throws: PlugboardError.self) { try $greeter.resolve() }
        #expect(error?.code == .notRegistered)
    }

    @Test func injected_readsTheCurrentProvider_everyTime() throws {
        let c = Container()
        @Injected(from: c) var greeter: (any Greeter)?
        try c.register((any Greeter).self, owner: "p") { _ in English() }
        #expect(greeter?.greet() == "hello")
        try c.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(greeter?.greet() == "bonjour")
        #expect(try $greeter.resolve().greet() == "bonjour")
    }

    @Test func injected_withAName_readsTheNamedProvider() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        @Injected(name: "formal", from: c) var formal: (any Greeter)?
        #expect(formal?.greet() == "hallo")
    }

    @Test func injected_worksAsAPropertyOfAnObjectTheContainerDoesNotBuild() throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore("injected") }
        final class Screen {
            @Injected var store: (any Store)?
            init(container: Container) { _store = Injected(from: container) }
        }
        let screen = Screen(container: c)
        #expect(screen.store?.label == "injected")
    }

    @Test func injector_resolvesTheInferredType() throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore("s") }
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        struct Model {
            let store: any Store
            let greeter: any Greeter
            init(_ injector: Injector) throws {
                store = try injector.dependency()
                greeter = try injector.dependency("formal")
            }
        }
        let model = try Model(Injector(c))
        #expect(model.store.label == "s")
        #expect(model.greeter.greet() == "hallo")
    }

    @Test func inferredResolveInAFactory_andAnInjectorOverALease_work() throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore("dep") }
        try c.register((any Mailer).self) { r in
            SMTPMailer(store: try r.resolve())
        }
        #expect(try c.resolve((any Mailer).self).store.label == "dep")
        let lease = c.lease()
        defer { lease.release() }
        let viaLease: any Mailer = try Injector(lease).dependency()
        #expect(viaLease.store.label == "dep")
    }

    @Test func injector_throwsNotRegistered_forAMissingDependency() {
        let injector = Injector(Container())
        let error = #expect(throws: PlugboardError.self) {
            let _: any Greeter = try injector.dependency()
        }
        #expect(error?.code == .notRegistered)
    }
}
