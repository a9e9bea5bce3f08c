import PlugboardAPI
import Synchronization

// Service protocols and implementations shared by the suites. They live at the top level
// of the test module so that their display names are `PlugboardAPITests.<Name>`.

protocol Greeter: Sendable {
    func greet() -> String
}

final class English: Greeter {
    func greet() -> String { "hello" }
}

final class French: Greeter {
    func greet() -> String { "bonjour" }
}

final class German: Greeter {
    func greet() -> String { "hallo" }
}

/// A greeter that says the word it was built with.
final class Parrot: Greeter {
    let word: String
    init(_ word: String) { self.word = word }
    func greet() -> String { word }
}

/// A value-type greeter (for the weak scope, which needs a class).
struct PlainGreeter: Greeter {
    func greet() -> String { "plain" }
}

protocol Store: Sendable {
    var label: String { get }
}

final class MemoryStore: Store {
    let label: String
    init(_ label: String = "memory") { self.label = label }
}

/// A service with a dependency, for constructor injection through the resolver.
protocol Mailer: Sendable {
    var store: any Store { get }
}

final class SMTPMailer: Mailer {
    let store: any Store
    init(store: any Store) { self.store = store }
}

/// Types that resolve each other in their factories, for the cycle tests.
protocol CycleA: Sendable {}
protocol CycleB: Sendable {}
protocol CycleC: Sendable {}
final class CycleNode: CycleA, CycleB, CycleC {}

/// What a factory throws in the tests.
struct Boom: Error, Equatable {
    let reason: String
}

/// Counts calls across threads.
final class Calls: Sendable {
    private let value = Atomic<Int>(0)

    /// Counts one call; returns the new total.
    @discardableResult
    func hit() -> Int { value.add(1, ordering: .relaxed).newValue }

    var count: Int { value.load(ordering: .relaxed) }
}
