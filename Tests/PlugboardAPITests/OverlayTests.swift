import PlugboardAPI
import Testing

@Suite("Overlay containers")
struct OverlayTests {
    @Test func overlay_seesTheParentsServices() throws {
        let parent = Container(environment: .testing)
        try parent.register((any Greeter).self) { _ in English() }
        let child = parent.overlay()
        #expect(try child.resolve((any Greeter).self).greet() == "hello")
        #expect(child.isRegistered((any Greeter).self))
        #expect(child.parent === parent)
        #expect(child.environment == .testing)
    }

    @Test func overlay_sharesTheParentsSingletons() throws {
        let parent = Container()
        try parent.register((any Store).self) { _ in MemoryStore() }
        let child = parent.overlay()
        #expect(try child.resolve((any Store).self) as AnyObject === parent.resolve((any Store).self) as AnyObject)
    }

    @Test func overlay_overridesAService_withoutChangingTheParent() throws {
        let parent = Container()
        try parent.register((any Greeter).self) { _ in English() }
        _ = try parent.resolve((any Greeter).self)
        let parentGeneration = parent.generation
        let parentRegistrations = parent.registrations()
        let child = parent.overlay()
        try child.register((any Greeter).self) { _ in French() }
        #expect(try child.resolve((any Greeter).self).greet() == "bonjour")
        #expect(try parent.resolve((any Greeter).self).greet() == "hello")
        #expect(parent.generation == parentGeneration)
        #expect(parent.registrations() == parentRegistrations)
        #expect(child.registrations().map(\.implementation).count == 1)
    }

    @Test func overlay_mayOverrideALowerRankedService() throws {
        // The override wins in the overlay even if the parent's provider has a higher rank.
        let parent = Container()
        try parent.register((any Greeter).self, rank: 100, owner: "plugin") { _ in English() }
        let child = parent.overlay()
        try child.register((any Greeter).self, rank: 0, owner: "test") { _ in Parrot("mock") }
        #expect(try child.resolve((any Greeter).self).greet() == "mock")
    }

    @Test func transientParentService_resolvedThroughTheOverlay_getsTheOverlaysOverrides() throws {
        let parent = Container()
        try parent.register((any Store).self) { _ in MemoryStore("real") }
        try parent.register((any Mailer).self, scope: .transient) { r in SMTPMailer(store: try r.resolve()) }
        let child = parent.overlay()
        try child.register((any Store).self) { _ in MemoryStore("fake") }
        #expect(try child.resolve((any Mailer).self).store.label == "fake")
        #expect(try child.handle((any Mailer).self).current.store.label == "fake")
        #expect(try child.resolveAll((any Mailer).self).map(\.store.label) == ["fake"])
        #expect(try parent.resolve((any Mailer).self).store.label == "real")
    }

    @Test func singletonParentService_isBuiltAgainstTheParentOnly() throws {
        // Documented: singletons are shared, so they never see an overlay's overrides.
        let parent = Container()
        try parent.register((any Store).self) { _ in MemoryStore("real") }
        try parent.register((any Mailer).self) { r in SMTPMailer(store: try r.resolve()) }
        let child = parent.overlay()
        try child.register((any Store).self) { _ in MemoryStore("fake") }
        #expect(try child.resolve((any Mailer).self).store.label == "real")
    }

    @Test func overlay_seesLaterChangesOfItsParent() throws {
        let parent = Container()
        let child = parent.overlay()
        let handle = child.handle((any Greeter).self)
        #expect(!child.isRegistered((any Greeter).self))
        try parent.register((any Greeter).self, owner: "p") { _ in English() }
        #expect(try child.resolve((any Greeter).self).greet() == "hello")
        try parent.replace((any Greeter).self, owner: "p") { _ in French() }
        #expect(try child.resolve((any Greeter).self).greet() == "bonjour")
        #expect(try handle.current.greet() == "bonjour")
    }

    @Test func overlayWithdrawingItsOverride_fallsBackToTheParent() throws {
        let parent = Container()
        try parent.register((any Greeter).self) { _ in English() }
        let child = parent.overlay()
        try child.register((any Greeter).self, owner: "test") { _ in French() }
        try child.unregister((any Greeter).self, owner: "test")
        #expect(try child.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func overlay_cannotUnregisterAParentsService() throws {
        let parent = Container()
        try parent.register((any Greeter).self) { _ in English() }
        let child = parent.overlay()
        let error = #expect(throws: PlugboardError.self) { try child.unregister((any Greeter).self) }
        #expect(error?.code == .notRegistered)
        #expect(child.unregisterAll(owner: "host") == 0)
        #expect(try parent.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func resolveAllThroughTheOverlay_listsTheOverlaysProvidersFirst() throws {
        let parent = Container()
        try parent.register((any Greeter).self, rank: 10, owner: "plugin") { _ in German() }
        try parent.register((any Greeter).self, owner: "host") { _ in English() }
        let child = parent.overlay()
        try child.register((any Greeter).self, owner: "host") { _ in Parrot("mock") }
        // The overlay's "host" provider shadows the parent's "host" provider.
        #expect(try child.resolveAll((any Greeter).self).map { $0.greet() } == ["mock", "hallo"])
    }

    @Test func overlayOfAnOverlay_seesBothAncestors() throws {
        let root = Container()
        try root.register((any Store).self) { _ in MemoryStore("root") }
        let middle = root.overlay()
        try middle.register((any Greeter).self) { _ in English() }
        let leaf = middle.overlay()
        #expect(try leaf.resolve((any Store).self).label == "root")
        #expect(try leaf.resolve((any Greeter).self).greet() == "hello")
    }

    @Test func missThroughTheOverlay_listsTheParentsServicesAsClosest() throws {
        let parent = Container()
        try parent.register((any Greeter).self, name: "formal") { _ in German() }
        let child = parent.overlay()
        let error = #expect(throws: PlugboardError.self) { try child.resolve((any Greeter).self) }
        #expect(error?.code == .notRegistered)
        #expect(error?.detail?.contains("\"formal\"") == true)
    }
}
