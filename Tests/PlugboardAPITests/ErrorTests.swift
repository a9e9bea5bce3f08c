import PlugboardAPI
import Testing

/// A protocol nobody registers, whose name is close to `Greeter`.
protocol Greetings: Sendable {}

/// A copy of PlugboardAPI's `LogHandler` protocol in this module: same unqualified name,
/// another type, as when a plugin copies a protocol instead of importing it.
enum Copied {
    protocol LogHandler: Sendable {}
}

private let a = "PlugboardAPITests.CycleA"
private let b = "PlugboardAPITests.CycleB"
private let cc = "PlugboardAPITests.CycleC"

@Suite("Errors and diagnostics")
struct ErrorTests {
    // MARK: not registered

    @Test func notRegistered_namesTheServiceAndListsTheClosestRegisteredOnes() throws {
        let c = Container()
        try c.register((any Greeter).self) { _ in English() }
        try c.register((any Store).self) { _ in MemoryStore() }
        try c.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        try c.register(Int.self, instance: 1)
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greetings).self) }
        #expect(error?.code == .notRegistered)
        #expect(error?.message.contains("PlugboardAPITests.Greetings") == true)
        let detail = try #require(error?.detail)
        #expect(detail.contains("Closest registered: PlugboardAPITests.Greeter"), "\(detail)")
        #expect(detail.contains("4 service types"), "\(detail)")
        #expect(error?.hint != nil)
    }

    @Test func notRegistered_inAnEmptyContainer_saysNothingIsRegistered() {
        let error = #expect(throws: PlugboardError.self) { try Container().resolve((any Greeter).self) }
        #expect(error?.detail == "Nothing is registered.")
    }

    @Test func notRegisteredUnderAName_listsTheNamesItIsRegisteredUnder() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        try c.register((any Greeter).self, name: "casual") { _ in English() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self, name: "pirate") }
        #expect(error?.code == .notRegistered)
        #expect(error?.message.contains("\"pirate\"") == true)
        #expect(error?.detail?.contains("\"casual\", \"formal\"") == true)
    }

    @Test func notRegistered_whenTheSameNameComesFromAnotherModule_hintsAtACopiedProtocol() throws {
        let c = Container()
        try c.register((any PlugboardAPI.LogHandler).self, instance: NoOpLogHandler())
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Copied.LogHandler).self) }
        #expect(error?.code == .notRegistered)
        #expect(error?.detail?.contains("PlugboardAPI.LogHandler") == true)
        #expect(error?.detail?.contains("PlugboardAPITests.Copied.LogHandler") == true)
        #expect(error?.hint?.contains("copied") == true)
    }

    @Test func notRegistered_description_carriesCodeMessageDetailAndHint() {
        let error = #expect(throws: PlugboardError.self) { try Container().resolve((any Greeter).self) }
        let lines = error?.description.split(separator: "\n").map(String.init) ?? []
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("container.not_registered: no service registered for PlugboardAPITests.Greeter") == true)
        #expect(lines.dropFirst().first?.hasPrefix("DETAIL: ") == true)
        #expect(lines.last?.hasPrefix("HINT: ") == true)
        #expect(error?.code.area == "container")
    }

    @Test func notRegistered_texts_areWordForWordThoseOfAMiss() throws {
        let empty = #expect(throws: PlugboardError.self) { try Container().resolve((any Greeter).self) }
        #expect(empty?.message == "no service registered for PlugboardAPITests.Greeter")
        #expect(empty?.detail == "Nothing is registered.")
        #expect(empty?.hint == "Register a provider of PlugboardAPITests.Greeter (is the plugin that provides it loaded and active?).")

        let c = Container()
        try c.register((any Greeter).self, name: "formal") { _ in German() }
        try c.register((any Greeter).self, name: "casual") { _ in English() }
        let named = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self, name: "pirate") }
        #expect(named?.message == "no service registered for PlugboardAPITests.Greeter (name \"pirate\")")
        #expect(named?.detail == "PlugboardAPITests.Greeter is registered under: \"casual\", \"formal\".")
        #expect(named?.hint == "Resolve it with one of those names, or register a provider under the name you asked for.")
        #expect(named?.underlying == nil)
    }

    @Test func notRegistered_describesTheGenerationItHappenedOn_whenFirstRead() throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore() }
        // Caught by hand: #expect(throws:) reads the error's texts when it catches it.
        func miss() -> PlugboardError? {
            do throws(PlugboardError) {
                _ = try c.resolve((any Greeter).self)
                return nil
            } catch {
                return error
            }
        }
        let first = try #require(miss())
        let again = try #require(miss())
        try c.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        let later = try #require(miss())
        let copy = first
        #expect(first.detail?.contains("PlugboardAPITests.Store") == true, "\(first.detail ?? "")")
        #expect(first.detail?.contains("PlugboardAPITests.Mailer") == false, "registered after the miss")
        #expect(copy.description == first.description)
        #expect(again.description == first.description)
        #expect(later.detail?.contains("PlugboardAPITests.Mailer") == true, "\(later.detail ?? "")")
        #expect(later.message == first.message)

        // The same through an overlay, whose misses also look in the parent.
        let overlay = c.overlay()
        let throughOverlay = #expect(throws: PlugboardError.self) { try overlay.resolve((any Greeter).self) }
        #expect(throughOverlay?.detail == later.detail)
        let named = #expect(throws: PlugboardError.self) { try c.resolve((any Store).self, name: "cold") }
        #expect(named?.detail == "PlugboardAPITests.Store is registered under: no name.")
    }

    @Test func notRegistered_readOnManyThreadsAtOnce_givesEveryOneTheSameTexts() async throws {
        let c = Container()
        try c.register((any Store).self) { _ in MemoryStore() }
        let error = try #require(#expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) })
        let barrier = Barrier(parties: 4)
        let seen = Collected<String>()
        let finished = await onThreads(4) { _ in
            barrier.arrive()
            seen.append(error.description)
        }
        #expect(finished)
        #expect(seen.all.count == 4)
        #expect(Set(seen.all).count == 1)
    }

    // MARK: circular dependencies

    @Test func transientThatResolvesItself_isACircularDependency() throws {
        let c = Container()
        try c.register((any CycleA).self, scope: .transient) { r in _ = try r.resolve((any CycleA).self); return CycleNode() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(a)") == true)
    }

    @Test func transientCycle_reportsTheFullPath() throws {
        let c = Container()
        try c.register((any CycleA).self, scope: .transient) { r in _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self, scope: .transient) { r in _ = try r.resolve((any CycleA).self); return CycleNode() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(b) -> \(a)") == true, "\(String(describing: error))")
    }

    @Test func singletonCycle_reportsTheFullPath() throws {
        let c = Container()
        try c.register((any CycleA).self) { r in _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self) { r in _ = try r.resolve((any CycleA).self); return CycleNode() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(b) -> \(a)") == true, "\(String(describing: error))")
        // The other way round, the path starts at B.
        let reverse = #expect(throws: PlugboardError.self) { try c.resolve((any CycleB).self) }
        #expect(reverse?.message.contains("\(b) -> \(a) -> \(b)") == true)
    }

    @Test func threeServiceCycle_mixingScopes_reportsEveryStep() throws {
        let c = Container()
        try c.register((any CycleA).self) { r in _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self, scope: .transient) { r in _ = try r.resolve((any CycleC).self); return CycleNode() }
        try c.register((any CycleC).self, scope: .weak) { r in _ = try r.resolve((any CycleA).self); return CycleNode() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(b) -> \(cc) -> \(a)") == true, "\(String(describing: error))")
    }

    @Test(arguments: [Scope.transient, .singleton, .weak])
    func cycleThroughACapturedContainer_isReportedToo(scope: Scope) throws {
        let c = Container()
        try c.register((any CycleA).self, scope: scope) { [c] _ in _ = try c.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self, scope: scope) { [c] _ in _ = try c.resolve((any CycleA).self); return CycleNode() }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(b) -> \(a)") == true, "\(String(describing: error))")
    }

    @Test func cycleThroughHandlesAndLeases_isReportedToo() throws {
        let c = Container()
        let handleB = c.handle((any CycleB).self)
        try c.register((any CycleA).self, scope: .transient) { _ in _ = try handleB.current; return CycleNode() }
        try c.register((any CycleB).self, scope: .transient) { [c] _ in
            try c.withLeaseSync { lease in _ = try lease.resolve((any CycleA).self) }
            return CycleNode()
        }
        let error = #expect(throws: PlugboardError.self) { try c.handle((any CycleA).self).current }
        #expect(error?.code == .circularDependency)
        #expect(error?.message.contains("\(a) -> \(b) -> \(a)") == true, "\(String(describing: error))")
    }

    @Test func afterACycleError_theContainerStillWorks_onceTheCycleIsBroken() throws {
        let c = Container()
        try c.register((any CycleA).self) { r in _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self, owner: "p") { r in _ = try r.resolve((any CycleA).self); return CycleNode() }
        #expect(throws: PlugboardError.self) { try c.resolve((any CycleA).self) }
        try c.replace((any CycleB).self, owner: "p") { _ in CycleNode() }
        _ = try c.resolve((any CycleA).self)
        _ = try c.resolve((any CycleB).self)
    }

    @Test func singletonsBuiltOnTwoThreadsThatNeedEachOther_reportACycle_insteadOfDeadlocking() async throws {
        // Both factories are made to run at the same time (the barrier), so each thread
        // owns one singleton's build and then asks for the other's.
        let c = Container()
        let barrier = Barrier(parties: 2)
        try c.register((any CycleA).self) { r in barrier.arrive(); _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self) { r in barrier.arrive(); _ = try r.resolve((any CycleA).self); return CycleNode() }
        let errors = Collected<PlugboardError>()
        let finished = await onThreads(2, timeout: 60) { i in
            do throws(PlugboardError) {
                if i == 0 { _ = try c.resolve((any CycleA).self) } else { _ = try c.resolve((any CycleB).self) }
            } catch {
                errors.append(error)
            }
        }
        #expect(finished, "the two singleton builds deadlocked")
        #expect(errors.all.count == 2)
        for error in errors.all {
            #expect(error.code == .circularDependency)
            #expect(error.message.contains(a) && error.message.contains(b), "\(error)")
        }
    }

    @Test func singletonsBuiltOnThreeThreadsInARing_reportACycle_insteadOfDeadlocking() async throws {
        let c = Container()
        let barrier = Barrier(parties: 3)
        try c.register((any CycleA).self) { r in barrier.arrive(); _ = try r.resolve((any CycleB).self); return CycleNode() }
        try c.register((any CycleB).self) { r in barrier.arrive(); _ = try r.resolve((any CycleC).self); return CycleNode() }
        try c.register((any CycleC).self) { r in barrier.arrive(); _ = try r.resolve((any CycleA).self); return CycleNode() }
        let codes = Collected<PlugboardError.Code>()
        let finished = await onThreads(3, timeout: 60) { i in
            do throws(PlugboardError) {
                switch i {
                case 0: _ = try c.resolve((any CycleA).self)
                case 1: _ = try c.resolve((any CycleB).self)
                default: _ = try c.resolve((any CycleC).self)
                }
            } catch {
                codes.append(error.code)
            }
        }
        #expect(finished, "the three singleton builds deadlocked")
        #expect(codes.all == [.circularDependency, .circularDependency, .circularDependency])
    }

    @Test func cycleInAManagedTransaction_rollsItBack() async throws {
        let c = Container()
        let journal = Journal()
        let error = await #expect(throws: PlugboardError.self) {
            try await c.transaction(owner: "p") { tx in
                try tx.worker("X", journal: journal, dependsOn: ["Y"])
                try tx.worker("Y", journal: journal, dependsOn: ["X"])
            }
        }
        #expect(error?.code == .circularDependency)
        #expect(c.registrations().isEmpty)
        #expect(journal.entries.isEmpty)
    }

    @Test(arguments: [Scope.transient, .singleton, .weak])
    func veryDeepResolution_isAnError_notAStackOverflow(scope: Scope) throws {
        // Each named Store resolves the next one: a chain longer than the container allows.
        let c = Container()
        for i in 0..<300 {
            try c.register((any Store).self, name: "\(i)", scope: scope) { r in
                MemoryStore(try r.resolve((any Store).self, name: "\(i + 1)").label)
            }
        }
        try c.register((any Store).self, name: "300", instance: MemoryStore("bottom"))
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Store).self, name: "0") }
        #expect(error?.code == .resolutionTooDeep)
        #expect(error?.message.contains("128") == true)
        // The limit is 128 factories on the stack at once: "172" runs 128, "171" 129.
        let tooDeep = #expect(throws: PlugboardError.self) { try c.resolve((any Store).self, name: "171") }
        #expect(tooDeep?.code == .resolutionTooDeep)
        #expect(try c.resolve((any Store).self, name: "172").label == "bottom")
        if scope == .singleton {
            // Built singletons are not built again, so the chain can be built in steps.
            #expect(try c.resolve((any Store).self, name: "50").label == "bottom")
            #expect(try c.resolve((any Store).self, name: "0").label == "bottom")
        }
    }

    // MARK: factory failures

    @Test func factoryFailed_namesTheServiceAndCarriesTheUnderlyingError() throws {
        let c = Container()
        try c.register((any Greeter).self, name: "moody") { _ in throw Boom(reason: "no greeting today") }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self, name: "moody") }
        #expect(error?.code == .factoryFailed)
        #expect(error?.message.contains("PlugboardAPITests.Greeter") == true)
        #expect(error?.message.contains("moody") == true)
        #expect(error?.detail?.contains("no greeting today") == true)
        #expect(error?.underlying as? Boom == Boom(reason: "no greeting today"))
    }

    @Test func factoryFailedInADependency_namesBothServices() throws {
        let c = Container()
        try c.register((any Store).self) { _ in throw Boom(reason: "disk full") }
        try c.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Mailer).self) }
        #expect(error?.code == .factoryFailed)
        #expect(error?.message.contains("PlugboardAPITests.Mailer") == true)
        let inner = error?.underlying as? PlugboardError
        #expect(inner?.code == .factoryFailed)
        #expect(inner?.message.contains("PlugboardAPITests.Store") == true)
        #expect(inner?.underlying as? Boom == Boom(reason: "disk full"))
        #expect(error?.detail?.contains("PlugboardAPITests.Store") == true)
    }

    @Test func missingDependency_isAFactoryFailureWrappingNotRegistered() throws {
        let c = Container()
        try c.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Mailer).self) }
        #expect(error?.code == .factoryFailed)
        #expect((error?.underlying as? PlugboardError)?.code == .notRegistered)
    }

    @Test func errorCodes_areStableStrings() {
        #expect(PlugboardError.Code.notRegistered.rawValue == "container.not_registered")
        #expect(PlugboardError.Code.circularDependency.rawValue == "container.circular_dependency")
        #expect(PlugboardError.Code.duplicateRegistration.rawValue == "container.duplicate_registration")
        #expect(PlugboardError.Code.factoryFailed.rawValue == "container.factory_failed")
        let custom: PlugboardError.Code = "host.custom_failure"
        #expect(custom.area == "host")
        let error = PlugboardError(custom, "custom failure", detail: "Details.", hint: "Hint.")
        #expect(error.description == "host.custom_failure: custom failure\nDETAIL: Details.\nHINT: Hint.")
    }
}
