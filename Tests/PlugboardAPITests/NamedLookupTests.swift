import PlugboardAPI
import Testing

/// The snapshot's table of named keys: every name finds its own provider, whatever its
/// length or bytes, among many names and beside the unnamed key of the same type.
@Suite("Named lookups")
struct NamedLookupTests {
    /// Short names (in one word), long ones (past two words, a heap string), non-ASCII
    /// ones and names that differ in one byte.
    static let names = ["a", "svc-042", "svc-043", "exactly8", "sixteen-bytes-ab", "sixteen-bytes-ac",
                        "a name long enough to live on the heap, not inline", "grüße", " "]

    @Test func everyName_resolvesItsOwnProvider_andTheUnnamedKeyStaysItsOwn() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in Parrot("unnamed") }
        for name in Self.names {
            try c.register((any Greeter).self, name: name) { _ in Parrot("greeter \(name)") }
            try c.register((any Store).self, name: name) { _ in MemoryStore("store \(name)") }
        }
        for i in 0..<500 {
            try c.register((any Greeter).self, name: "filler-\(i)", instance: Parrot("filler-\(i)"))
        }
        for name in Self.names {
            #expect(try c.resolve((any Greeter).self, name: name).greet() == "greeter \(name)")
            #expect(try c.resolve((any Store).self, name: name).label == "store \(name)")
        }
        for i in stride(from: 0, to: 500, by: 37) {
            #expect(try c.resolve((any Greeter).self, name: "filler-\(i)").greet() == "filler-\(i)")
        }
        #expect(try c.resolve((any Greeter).self).greet() == "unnamed")
        #expect(try c.resolve((any Greeter).self, name: nil).greet() == "unnamed")
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Mailer).self, name: "svc-042") }
        #expect(error?.code == .notRegistered)
    }

    @Test func aNameBuiltAtRunTime_findsTheProviderRegisteredUnderTheLiteral() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "svc-042") { _ in German() }
        let built = "svc-" + String(42).padding(toLength: 3, leadingZeros: true)
        #expect(try c.resolve((any Greeter).self, name: built).greet() == "hallo")
        let sliced = String("xsvc-042".dropFirst())
        #expect(try c.resolve((any Greeter).self, name: sliced).greet() == "hallo")
    }

    @Test func namedTransient_isBuiltOnEveryResolve_andNamedSingletonOnce() throws {
        let c = Container()
        let transientBuilds = Calls(), singletonBuilds = Calls()
        try c.register((any Store).self, name: "scratch", scope: .transient) { _ in
            transientBuilds.hit()
            return MemoryStore("scratch")
        }
        try c.register((any Store).self, name: "shared") { _ in
            singletonBuilds.hit()
            return MemoryStore("shared")
        }
        for _ in 0..<3 {
            #expect(try c.resolve((any Store).self, name: "scratch").label == "scratch")
            #expect(try c.resolve((any Store).self, name: "shared").label == "shared")
        }
        #expect(transientBuilds.count == 3)
        #expect(singletonBuilds.count == 1)
    }

    @Test func namedKey_followsReplacements_andUnregistration() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "formal", instance: German())
        #expect(try c.resolve((any Greeter).self, name: "formal").greet() == "hallo")
        try c.replace((any Greeter).self, name: "formal", instance: French())
        #expect(try c.resolve((any Greeter).self, name: "formal").greet() == "bonjour")
        try c.unregister((any Greeter).self, name: "formal")
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self, name: "formal") }
        #expect(error?.code == .notRegistered)
    }

    @Test func overlay_findsItsParentsNamedProvider_andItsOwnOverride() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "formal", instance: German())
        try c.register((any Greeter).self, name: "casual", instance: English())
        let child = c.overlay()
        try child.register((any Greeter).self, name: "casual", instance: French())
        #expect(try child.resolve((any Greeter).self, name: "formal").greet() == "hallo")
        #expect(try child.resolve((any Greeter).self, name: "casual").greet() == "bonjour")
        #expect(try c.resolve((any Greeter).self, name: "casual").greet() == "hello")
    }
}

private extension String {
    func padding(toLength length: Int, leadingZeros: Bool) -> String {
        String(repeating: "0", count: Swift.max(0, length - count)) + self
    }
}
