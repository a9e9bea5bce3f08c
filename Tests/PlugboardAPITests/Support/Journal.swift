import Foundation
import PlugboardAPI

/// An ordered record of what happened, written from any thread.
final class Journal: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched with `lock` held (NSLock, which TSan sees).
    private let lock = NSLock()
    private var lines: [String] = []

    func record(_ line: String) {
        lock.lock()
        lines.append(line)
        lock.unlock()
    }

    var entries: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }

    /// The entries that start with `prefix`, in order.
    func entries(startingWith prefix: String) -> [String] {
        entries.filter { $0.hasPrefix(prefix) }
    }
}

/// A managed service that writes `start <name>` and `stop <name>` to a journal.
protocol Worker: Sendable {
    var name: String { get }
    var stopCount: Int { get }
}

final class JournalWorker: Worker, ManagedService {
    let name: String
    let journal: Journal
    let failsToStart: Bool
    /// What it depends on, to show it was built with them.
    let dependencies: [any Worker]
    private let stops = Calls()
    private let starts = Calls()

    init(_ name: String, journal: Journal, dependencies: [any Worker] = [], failsToStart: Bool = false) {
        self.name = name
        self.journal = journal
        self.dependencies = dependencies
        self.failsToStart = failsToStart
    }

    var stopCount: Int { stops.count }
    var startCount: Int { starts.count }

    func start() async throws {
        starts.hit()
        journal.record("start \(name)")
        if failsToStart { throw Boom(reason: "\(name) refuses to start") }
    }

    func stop() async {
        stops.hit()
        journal.record("stop \(name)")
    }
}

extension Transaction {
    /// Registers a managed `JournalWorker` under `(any Worker).self` named `name`, built
    /// after resolving the workers named in `dependsOn` through the factory's resolver.
    func worker(_ name: String, journal: Journal, dependsOn: [String] = [], failsToStart: Bool = false,
                replace: Bool = false) throws {
        let factory: @Sendable (borrowing Resolver) throws -> any Worker = { r in
            let deps = try dependsOn.map { try r.resolve((any Worker).self, name: $0) }
            return JournalWorker(name, journal: journal, dependencies: deps, failsToStart: failsToStart)
        }
        if replace {
            try self.replace((any Worker).self, name: name, managed: true, factory: factory)
        } else {
            try register((any Worker).self, name: name, managed: true, factory: factory)
        }
    }
}
