import Foundation
import PlugboardAPI
import Testing

@Suite("Scopes")
struct ScopeTests {
    @Test func transient_buildsANewValueOnEveryResolve() throws {
        let c = Container()
        let calls = Calls()
        try c.register((any Greeter).self, scope: .transient) { _ in calls.hit(); return English() }
        let a = try c.resolve((any Greeter).self)
        let b = try c.resolve((any Greeter).self)
        #expect(a as AnyObject !== b as AnyObject)
        #expect(calls.count == 2)
    }

    @Test func singleton_isBuiltOnFirstResolveOnly_andShared() throws {
        let c = Container()
        let calls = Calls()
        try c.register((any Greeter).self, scope: .singleton) { _ in calls.hit(); return English() }
        #expect(calls.count == 0, "a singleton must not be built at registration")
        let a = try c.resolve((any Greeter).self)
        let b = try c.resolve((any Greeter).self)
        let viaHandle = try c.handle((any Greeter).self).current
        #expect(a as AnyObject === b as AnyObject)
        #expect(a as AnyObject === viaHandle as AnyObject)
        #expect(calls.count == 1)
    }

    @Test func singleton_isTheDefaultScope() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        #expect(c.registrations().first?.scope == .singleton)
        #expect(try c.resolve((any Greeter).self) as AnyObject === c.resolve((any Greeter).self) as AnyObject)
    }

    @Test func singleton_whoseFactoryFailed_isBuiltAgainOnTheNextResolve() throws {
        let c = Container()
        let calls = Calls()
        try c.register((any Greeter).self) { _ in
            if calls.hit() == 1 { throw Boom(reason: "first attempt") }
            return English()
        }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) }
        #expect(error?.code == .factoryFailed)
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        #expect(try c.resolve((any Greeter).self).greet() == "hello")
        #expect(calls.count == 2)
    }

    @Test func singleton_racedByManyThreads_isBuiltExactlyOnce() async throws {
        let c = Container()
        let calls = Calls()
        try c.register((any Greeter).self) { _ in
            calls.hit()
            usleep(20_000)  // widen the race window; not synchronization
            return English()
        }
        let threads = 8
        let start = Barrier(parties: threads)
        let seen = Collected<ObjectIdentifier>()
        let finished = await onThreads(threads) { _ in
            start.arrive()
            if let g = try? c.resolve((any Greeter).self) { seen.append(ObjectIdentifier(g as AnyObject)) }
        }
        #expect(finished)
        #expect(calls.count == 1)
        #expect(seen.all.count == threads)
        #expect(Set(seen.all).count == 1)
    }

    @Test func weak_isSharedWhileSomeoneHoldsIt_andRebuiltAfterItIsGone() throws {
        let c = Container()
        let calls = Calls()
        try c.register((any Greeter).self, scope: .weak) { _ in calls.hit(); return English() }
        weak var weakFirst: AnyObject?
        do {
            let first = try c.resolve((any Greeter).self)
            let second = try c.resolve((any Greeter).self)
            #expect(first as AnyObject === second as AnyObject)
            #expect(calls.count == 1)
            weakFirst = first as AnyObject
        }
        #expect(weakFirst == nil, "the container must not keep a weak-scoped value alive")
        let third = try c.resolve((any Greeter).self)
        #expect(third.greet() == "hello")
        #expect(calls.count == 2)
    }

    @Test func weak_ofAValueType_isAnInvalidRegistrationError() throws {
        let c = Container()
        try c.register((any Greeter).self, scope: .weak) { _ in PlainGreeter() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) }
        #expect(error?.code == .invalidRegistration)
    }

    @Test func instance_isReturnedAsIs_andNeverBuilt() throws {
        let c = Container()
        let store = MemoryStore("given")
        try c.register((any Store).self, instance: store)
        #expect(try c.resolve((any Store).self) as AnyObject === store)
        #expect(c.registrations().first?.scope == .instance)
    }

    @Test func scopes_printAndEncodeByName() throws {
        #expect([Scope.instance, .singleton, .transient, .weak].map(\.description)
                == ["instance", "singleton", "transient", "weak"])
        let data = try JSONEncoder().encode([Scope.weak, .transient])
        #expect(String(decoding: data, as: UTF8.self) == #"["weak","transient"]"#)
        #expect(try JSONDecoder().decode([Scope].self, from: data) == [.weak, .transient])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Scope].self, from: Data(#"["forever"]"#.utf8))
        }
    }
}
