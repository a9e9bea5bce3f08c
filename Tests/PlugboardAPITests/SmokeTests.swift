import PlugboardAPI
import Testing

protocol Greeter: Sendable { func greet() -> String }
struct English: Greeter { func greet() -> String { "hello" } }

@Test func resolvesARegisteredSingleton() throws {
    let c = Container()
    try c.register((any Greeter).self) { _ in English() }
    let g: any Greeter = try c.resolve()
    #expect(g.greet() == "hello")
}
