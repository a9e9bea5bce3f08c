import PlugboardAPI
import Testing

/// An error that wraps another (a managed service that failed to start, a factory that
/// threw) tells its cause in one form: "It threw CODE: MESSAGE." and the cause's detail on
/// one line, each ending in one period, and the cause's hint as what to do.
@Suite struct NestedCauseTests {
    /// A cause shaped as plugins write them: detail and hint complete sentences.
    static let cause = PlugboardError(.configInvalid, "\"/srv/x\", on the way to the root, is not a folder",
                                      detail: "config.root needs a folder there; found a regular file.",
                                      hint: "Point \"root\" at a folder, or move the file out of the way.")

    protocol Service: Sendable {}

    final class Refusing: ManagedService, Service {
        func start() async throws { throw NestedCauseTests.cause }
        func stop() async {}
    }

    static func expectTold(_ detail: String?, sourceLocation: SourceLocation = #_sourceLocation) {
        let detail = detail ?? ""
        #expect(detail.hasPrefix("It threw plugin.config_invalid: \"/srv/x\", on the way to the root, is not a folder. config.root needs a folder there; found a regular file."),
                "\(detail)", sourceLocation: sourceLocation)
        #expect(!detail.contains("\n"), "\(detail)", sourceLocation: sourceLocation)
        #expect(!detail.contains(".."), "\(detail)", sourceLocation: sourceLocation)
        #expect(!detail.contains("DETAIL:") && !detail.contains("HINT:"), "\(detail)", sourceLocation: sourceLocation)
    }

    @Test func aServiceThatFailsToStart_namesItsCauseOnce() async throws {
        let c = Container()
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.register((any Service).self, managed: true) { _ in Refusing() }
            }
        }
        #expect(error?.code == .startFailed)
        Self.expectTold(error?.detail)
        #expect(error?.hint == "Point \"root\" at a folder, or move the file out of the way. Then load the plugin again.")
    }

    @Test func aFactoryThatThrows_namesItsCauseOnce() throws {
        let c = Container()
        try c.register((any Service).self, owner: "p") { _ throws in throw NestedCauseTests.cause }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Service).self) }
        #expect(error?.code == .factoryFailed)
        Self.expectTold(error?.detail)
        #expect(error?.hint == "Point \"root\" at a folder, or move the file out of the way. The next resolve calls the factory again.")
    }

    @Test func aCauseThatIsNoPlugboardError_isOneSentence() throws {
        struct Odd: Error, CustomStringConvertible { var description: String { "line one\nline two" } }
        let c = Container()
        try c.register((any Service).self, owner: "p") { _ throws in throw Odd() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Service).self) }
        #expect(error?.detail == "It threw: line one line two.")
        #expect(error?.hint == "Fix the cause above; the next resolve calls the factory again.")
    }
}
