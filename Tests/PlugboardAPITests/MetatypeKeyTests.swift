import PlugboardAPI
import Testing

/// A service type with a subclass, so that a metatype *value* can differ from its static
/// type: `let t: Animal.Type = Dog.self`.
class Animal: @unchecked Sendable {
    func name() -> String { "animal" }
}

final class Dog: Animal, @unchecked Sendable {
    let tricks = ["sit", "fetch"]
    override func name() -> String { "dog" }
}

protocol Named {}
extension Animal: Named {}

/// Every public entry point of the container, given metatypes held in superclass and
/// existential variables. The container keys registrations by the static type `T`, the
/// type it stores and reads values as; keyed by the metatype value instead, `Animal()`
/// registered through `t` was read back as a `Dog` (a segfault in release builds). None
/// of these may trap, and each gives a value of the type asked for or a `container.*`
/// error.
@Suite("Metatype keys")
struct MetatypeKeyTests {
    /// `Dog.self` as the static type `Animal.Type`.
    let asAnimal: Animal.Type = Dog.self
    /// `Dog.self` as an existential metatype.
    let asAny: any Any.Type = Dog.self
    let asNamed: any Named.Type = Dog.self

    /// The value is really a `Dog` (its dynamic type, read from the object), or resolving
    /// it failed with `code`.
    func expectDogOrError(_ code: PlugboardError.Code = .notRegistered,
                          sourceLocation: SourceLocation = #_sourceLocation,
                          _ body: () throws(PlugboardError) -> Dog?) {
        do {
            if let dog = try body() {
                #expect(ObjectIdentifier(type(of: dog)) == ObjectIdentifier(Dog.self), sourceLocation: sourceLocation)
                #expect(dog.tricks == ["sit", "fetch"], sourceLocation: sourceLocation)
            }
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// What asking for a `Dog` gives after only an `Animal` was registered through `asAnimal`:
    /// nothing, by every way of asking.
    func expectNoDog(in c: Container, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(throws: PlugboardError.self, sourceLocation: sourceLocation) { _ = try c.resolve(Dog.self) }
        expectDogOrError(sourceLocation: sourceLocation) { () throws(PlugboardError) in try c.resolve(Dog.self) }
        #expect(try c.resolveAll(Dog.self).isEmpty, sourceLocation: sourceLocation)
        #expect(!c.isRegistered(Dog.self), sourceLocation: sourceLocation)
        // The Animal is where its static type says.
        #expect(try c.resolve(Animal.self).name() == "animal", sourceLocation: sourceLocation)
        #expect(c.isRegistered(Animal.self), sourceLocation: sourceLocation)
    }

    // MARK: - Registering through a superclass metatype

    @Test func containerRegisterInstance_keysByTheStaticType() throws {
        let c = Container()
        try c.register(asAnimal, instance: Animal())
        try expectNoDog(in: c)
    }

    @Test(arguments: [Scope.singleton, .transient, .weak])
    func containerRegisterFactory_keysByTheStaticType(scope: Scope) throws {
        let c = Container()
        try c.register(asAnimal, scope: scope) { _ in Animal() }
        try expectNoDog(in: c)
    }

    @Test func containerReplaceInstanceAndFactory_keyByTheStaticType() throws {
        let c = Container()
        try c.replace(asAnimal, instance: Animal())
        try expectNoDog(in: c)
        let f = Container()
        try f.replace(asAnimal) { _ in Animal() }
        try expectNoDog(in: f)
    }

    @Test func transactionRegisterAndReplace_keyByTheStaticType() async throws {
        let t = asAnimal
        for step in 0..<4 {
            let c = Container()
            try await c.transaction(owner: "p") { tx in
                switch step {
                case 0: try tx.register(t, instance: Animal())
                case 1: try tx.register(t) { _ in Animal() }
                case 2: try tx.replace(t, instance: Animal())
                default: try tx.replace(t, scope: .transient) { _ in Animal() }
                }
            }
            try expectNoDog(in: c)
        }
    }

    @Test func pluginRegistrar_keysByTheStaticType() async throws {
        let c = Container()
        let registrar = PluginRegistrar(pluginName: "p", container: c, config: PluginConfig([:], plugin: "p"), logger: .disabled)
        try registrar.register(asAnimal, instance: Animal())
        try await c.commit(registrar.transaction)
        try expectNoDog(in: c)
    }

    @Test func unregister_removesTheStaticTypesRegistration_notTheRuntimeOnes() async throws {
        let t = asAnimal
        for viaTransaction in [false, true] {
            let c = Container()
            try c.register(Dog.self, instance: Dog())
            try c.register(Animal.self, instance: Animal())
            if viaTransaction {
                try await c.transaction(owner: "host") { tx in tx.unregister(t) }
            } else {
                try c.unregister(t)
            }
            #expect(!c.isRegistered(Animal.self))
            #expect(try c.resolve(Dog.self).name() == "dog")
        }
    }

    // MARK: - Looking up through a superclass metatype

    @Test func resolveAndFriends_throughASuperclassMetatype_readTheStaticType() throws {
        let c = Container()
        try c.register(Dog.self, instance: Dog())
        try c.register(Animal.self, instance: Animal())
        #expect(try c.resolve(asAnimal).name() == "animal")
        #expect(try c.resolve(asAnimal, name: nil).name() == "animal")
        #expect(try c.resolveAll(asAnimal).map { $0.name() } == ["animal"])
        #expect(try c.handle(asAnimal).current.name() == "animal")
        #expect(try c.lease().resolve(asAnimal).name() == "animal")
        try c.unregister(Animal.self)
        #expect(!c.isRegistered(asAnimal))
        #expect(throws: PlugboardError.self) { try c.resolve(asAnimal) }
        #expect(throws: PlugboardError.self) { try c.handle(asAnimal).current }
    }

    @Test func handleLeaseAndInjected_neverGiveAnAnimalAsADog() throws {
        let c = Container()
        try c.register(asAnimal, instance: Animal())
        expectDogOrError { () throws(PlugboardError) in try c.handle(Dog.self).current }
        expectDogOrError { () throws(PlugboardError) in try c.handle(Dog.self, name: nil).current }
        let lease = c.lease()
        defer { lease.release() }
        expectDogOrError { () throws(PlugboardError) in try lease.resolve(Dog.self) }
        expectDogOrError { () throws(PlugboardError) in try lease.resolve(Dog.self, name: nil) }
        let injected = Injected(Dog.self, from: c)
        #expect(injected.wrappedValue == nil)
        expectDogOrError { () throws(PlugboardError) in try injected.resolve() }
        // The same handle gives a Dog once one is registered under Dog.
        let handle = c.handle(Dog.self)
        try c.register(Dog.self, instance: Dog())
        expectDogOrError { () throws(PlugboardError) in try handle.current }
        #expect(try handle.current.name() == "dog")
    }

    @Test func resolverInAFactory_keysByTheStaticType() throws {
        let c = Container()
        try c.register(asAnimal, instance: Animal())
        let t = asAnimal
        try c.register(String.self, scope: .transient) { r in try r.resolve(Dog.self).name() }
        try c.register(Int.self, scope: .transient) { r in try r.resolveAll(Dog.self).count }
        try c.register(Double.self, scope: .transient) { r in try r.resolve(t).name() == "animal" ? 1 : 0 }
        let error = #expect(throws: PlugboardError.self) { try c.resolve(String.self) }
        #expect(error?.code == .factoryFailed)
        #expect((error?.underlying as? PlugboardError)?.code == .notRegistered)
        #expect(try c.resolve(Int.self) == 0)
        #expect(try c.resolve(Double.self) == 1)
    }

    // MARK: - Existential metatypes

    @Test func existentialMetatypes_openToTheirDynamicType_consistently() throws {
        let c = Container()
        try c.register(Dog.self, instance: Dog())
        // `any Any.Type` and `any Named.Type` open to Dog: the lookups and the value agree.
        let anyIsRegistered = c.isRegistered(asAny), namedIsRegistered = c.isRegistered(asNamed)
        #expect(anyIsRegistered && namedIsRegistered)
        let any = try c.resolve(asAny)
        #expect((any as? Dog)?.name() == "dog")
        let named = try c.resolve(asNamed)
        #expect((named as? Dog)?.name() == "dog")
        #expect(try c.resolveAll(asAny).count == 1)
        #expect((try c.lease().resolve(asAny, name: nil) as? Dog)?.tricks == ["sit", "fetch"])
        try c.unregister(asNamed)
        #expect(!c.isRegistered(Dog.self))
        let error = #expect(throws: PlugboardError.self) { try c.resolve(asAny) }
        #expect(error?.code == .notRegistered)
    }

    @Test func theMissError_namesTheStaticType() throws {
        let c = Container()
        try c.register(Dog.self, instance: Dog())
        let error = #expect(throws: PlugboardError.self) { try c.resolve(asAnimal) }
        #expect(error?.code == .notRegistered)
        #expect(error?.message.contains("Animal") == true)
        #expect(error?.message.contains("Dog") == false)
    }
}
