import PlugboardAPI
import Testing

/// A greeter layer: says what the greeter below says, inside its own mark.
final class Marked: Greeter {
    let mark: String
    let below: any Greeter
    init(_ mark: String, _ below: any Greeter) { self.mark = mark; self.below = below }
    func greet() -> String { "\(mark)(\(below.greet()))" }
}

@Suite("Layers: a registration that wraps the provider below it")
struct LayerTests {
    /// A plugin's transaction as the loader makes it: owner, rank and the manifest's `wraps`.
    private func plugin(_ c: Container, _ owner: String, rank: Int = 0, wraps: String? = nil,
                        _ body: (Transaction) throws -> Void) throws -> Transaction {
        let tx = c.makeTransaction(owner: owner, rank: rank, wraps: wraps, requires: nil)
        try body(tx)
        return tx
    }

    private func word(_ word: String) -> (Transaction) throws -> Void {
        { tx in try tx.register((any Greeter).self) { _ in Parrot(word) } }
    }

    private func mark(_ mark: String, mayBeOutranked: Bool = false) -> (Transaction) throws -> Void {
        { tx in try tx.registerLayer((any Greeter).self, mayBeOutranked: mayBeOutranked) { _, below in Marked(mark, below) } }
    }

    @Test func aLayer_getsTheProviderItWraps_andStandsWhereItStood_whateverTheRanks() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", rank: 0, word("files")),
                            try plugin(c, "Other", rank: 5, word("other"))], verify: true)
        // Quota's rank is higher than both; it still stands right above Files, below Other
        // (a layer for consumers of resolveAll, so it may be outranked).
        try await c.commit([try plugin(c, "Quota", rank: 10, wraps: "Files", mark("quota", mayBeOutranked: true))], verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "other")
        #expect(try c.resolveAll((any Greeter).self).map { $0.greet() } == ["other", "quota(files)", "files"])
        let infos = c.registrations(owner: "Quota")
        #expect(infos.map(\.wraps) == ["Files"])
        #expect(c.registrations(owner: "Files").map(\.wraps) == [nil])
        // Without the other provider, the stack answers.
        try c.unregister((any Greeter).self, owner: "Other")
        #expect(try c.resolve((any Greeter).self).greet() == "quota(files)")
        #expect(c.registrations(owner: "Quota").first?.isActive == true)
    }

    /// A provider that comes after the stack is ranked against the stack's bottom, not
    /// against the layer's own rank.
    @Test func aProviderAddedLater_isRankedAgainstTheStacksBottom() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", rank: 0, word("files"))], verify: true)
        try await c.commit([try plugin(c, "Quota", rank: -100, wraps: "Files", mark("q", mayBeOutranked: true))], verify: true)
        try await c.commit([try plugin(c, "Lower", rank: -50, word("lower"))], verify: true)
        try await c.commit([try plugin(c, "Higher", rank: 50, word("higher"))], verify: true)
        #expect(try c.resolveAll((any Greeter).self).map { $0.greet() } == ["higher", "q(files)", "files", "lower"])
        try c.unregister((any Greeter).self, owner: "Higher")
        #expect(try c.resolve((any Greeter).self).greet() == "q(files)")
    }

    @Test func layersStack_eachOverTheOneItNames() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "C", word("c"))], verify: true)
        try await c.commit([try plugin(c, "B", wraps: "C", mark("b"))], verify: true)
        try await c.commit([try plugin(c, "A", rank: -3, wraps: "B", mark("a"))], verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "a(b(c))")
    }

    /// The first silent mistake: a reload that changes only the wrapper.
    @Test func aReloadOfTheLayerAlone_wrapsTheCurrentProvider_neverThePreviousLayer() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files", mark("q1"))], verify: true)
        let remove = c.makeTransaction(owner: "Quota")
        remove.unregisterAll()
        try await c.commit([remove, try plugin(c, "Quota", wraps: "Files", mark("q2"))], verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "q2(files)")
    }

    /// The second silent mistake: the wrapped plugin changes under the layer.
    @Test func aReloadOfTheWrappedProvider_rebuildsTheLayerOverItsNewBuild() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("old-root"))], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files", mark("q"))], verify: true)
        let removals = ["Files", "Quota"].map { owner -> Transaction in
            let tx = c.makeTransaction(owner: owner)
            tx.unregisterAll()
            return tx
        }
        try await c.commit(removals + [try plugin(c, "Files", word("new-root")), try plugin(c, "Quota", wraps: "Files", mark("q"))],
                           verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "q(new-root)")
        // A lease taken now reads the new stack whole.
        let leased = try await c.withLease { lease in try lease.resolve((any Greeter).self).greet() }
        #expect(leased == "q(new-root)")
    }

    @Test func aNamedLayer_wrapsTheProviderOfThatName_only() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files") { tx in
            try tx.register((any Greeter).self) { _ in Parrot("plain") }
            try tx.register((any Greeter).self, name: "archive") { _ in Parrot("archive") }
        }], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files") { tx in
            try tx.registerLayer((any Greeter).self, name: "archive") { _, below in Marked("q", below) }
        }], verify: true)
        #expect(try c.resolve((any Greeter).self, name: "archive").greet() == "q(archive)")
        #expect(try c.resolve((any Greeter).self).greet() == "plain")
    }

    @Test func aLayerWithoutWraps_isRefused_namingTheServiceAndThePlugin() throws {
        let c = Container()
        let tx = c.makeTransaction(owner: "Quota")
        let error = #expect(throws: PlugboardError.self) {
            try tx.registerLayer((any Greeter).self) { _, below in below }
        }
        #expect(error?.code == .layerUndeclared)
        #expect(error?.message.contains("Quota registered a layer of PlugboardAPITests.Greeter") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("\"wraps\"") == true)
    }

    @Test func aLayerOverAPluginWithoutTheService_isRefusedAtCommit_andNothingIsPublished() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        let before = c.generation
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([try plugin(c, "Quota", wraps: "Cache", mark("q"))], verify: true)
        }
        #expect(error?.code == .layerTargetMissing)
        #expect(error?.message.contains("\"Quota\" wraps \"Cache\", which provides no PlugboardAPITests.Greeter") == true,
                "\(String(describing: error))")
        #expect(error?.detail?.contains("found only \"Files\"") == true)
        #expect(c.generation == before)
        #expect(try c.resolve((any Greeter).self).greet() == "files")
    }

    @Test func twoLayersOverOneProvider_areRefused_withTheWayToStackThem() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files", mark("q"))], verify: true)
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([try plugin(c, "Audit", wraps: "Files", mark("a"))], verify: true)
        }
        #expect(error?.code == .layerSlotTaken)
        #expect(error?.message.contains("\"Quota\" and \"Audit\" both wrap") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("\"wraps\": \"Quota\"") == true)
        #expect(try c.resolve((any Greeter).self).greet() == "q(files)")
    }

    @Test func removingTheWrappedProviderUnderALayer_isRefused() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files", mark("q"))], verify: true)
        let error = #expect(throws: PlugboardError.self) { try c.unregister((any Greeter).self, owner: "Files") }
        #expect(error?.code == .layerTargetMissing)
        #expect(try c.resolve((any Greeter).self).greet() == "q(files)")
    }

    /// What the trial met: a factory that resolves its own service finds itself; the hint
    /// says how to wrap the provider below instead of pointing back at the wrapper.
    @Test func aFactoryResolvingItsOwnService_getsAHintAboutLayers() throws {
        let c = Container()
        try c.register((any Greeter).self, owner: "Files") { _ in Parrot("files") }
        try c.register((any Greeter).self, rank: 5, owner: "Quota") { r in Marked("q", try r.resolve((any Greeter).self)) }
        let error = #expect(throws: PlugboardError.self) { try c.resolve((any Greeter).self) }
        #expect(error?.code == .circularDependency)
        #expect(error?.hint?.contains("registerLayer") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("\"wraps\"") == true)
        #expect(error?.hint?.contains("inject a ServiceHandle") == false)
    }

    /// A layer only resolveAll could reach is refused: the operator who put a quota or a
    /// mirror over a provider means the provider the front ends get.
    @Test func aLayerOverAnOutrankedProvider_isRefused_namingWhoOutranksIt_andNothingIsPublished() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "S3", rank: 0, word("s3")), try plugin(c, "Files", rank: -1, word("files"))], verify: true)
        let before = c.generation
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([try plugin(c, "Mirror", wraps: "Files", mark("m"))], verify: true)
        }
        #expect(error?.code == .layerOutranked)
        #expect(error?.message.contains("layer \"Mirror\" over \"Files\" would never be used: \"S3\" outranks \"Files\"") == true,
                "\(String(describing: error))")
        #expect(error?.detail?.contains("found \"S3\" (rank 0) before \"Files\" (rank -1)") == true)
        #expect(error?.hint?.contains("\"rank\": -2") == true)
        #expect(c.generation == before)
        #expect(c.registrations(owner: "Mirror").isEmpty)
        #expect(try c.resolve((any Greeter).self).greet() == "s3")
    }

    /// Equal ranks go to the earlier registration: a provider loaded first (a mirror's
    /// `requires` loads its target first) outranks the one a layer wraps.
    @Test func aProviderThatWinsATie_outranksTheStack_andIsRefused() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "S3", word("s3"))], verify: true)
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([try plugin(c, "Mirror", wraps: "Files", mark("m"))], verify: true)
        }
        #expect(error?.code == .layerOutranked)
    }

    /// The other order: a provider added later that would outrank a stack is refused too.
    @Test func aProviderThatWouldOutrankAStack_isRefused_andTheStackStillAnswers() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files"))], verify: true)
        try await c.commit([try plugin(c, "Quota", wraps: "Files", mark("q"))], verify: true)
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([try plugin(c, "Higher", rank: 5, word("higher"))], verify: true)
        }
        #expect(error?.code == .layerOutranked)
        #expect(error?.message.contains("\"Higher\" outranks \"Files\"") == true, "\(String(describing: error))")
        #expect(try c.resolve((any Greeter).self).greet() == "q(files)")
    }

    /// A factory may resolve by owner only a plugin its manifest entry requires: a reload
    /// of any other would not rebuild it, and it would keep that plugin's retired build.
    @Test func aResolveByOwner_ofAPluginNotRequired_isRefused_andOneRequiredIsAnswered() async throws {
        let c = Container()
        try await c.commit([try plugin(c, "Files", word("files")), try plugin(c, "S3", rank: -1, word("s3"))], verify: true)
        func mirror(requires: [String]?) -> Transaction {
            let tx = c.makeTransaction(owner: "Mirror", rank: 0, wraps: "Files", requires: requires)
            try? tx.registerLayer((any Greeter).self) { r, below in
                Marked("m", Marked(try r.resolve((any Greeter).self, ownedBy: "S3").greet(), below))
            }
            return tx
        }
        let error = await #expect(throws: PlugboardError.self) {
            try await c.commit([mirror(requires: ["Files"])], verify: true)
        }
        #expect(error?.code == .ownerNotRequired, "\(String(describing: error))")
        #expect(error?.message.contains("plugin \"Mirror\" resolves the PlugboardAPITests.Greeter of \"S3\" without requiring \"S3\"") == true,
                "\(String(describing: error))")
        #expect(error?.detail?.contains("found \"Files\"") == true)
        #expect(error?.hint?.contains("Add \"S3\" to \"requires\" in the manifest entry \"Mirror\"") == true)
        #expect(c.registrations(owner: "Mirror").isEmpty)
        try await c.commit([mirror(requires: ["Files", "S3"])], verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "m(s3(files))")
        // A transaction no manifest described (requires nil) is not checked.
        let remove = c.makeTransaction(owner: "Mirror")
        remove.unregisterAll()
        try await c.commit([remove, mirror(requires: nil)], verify: true)
        #expect(try c.resolve((any Greeter).self).greet() == "m(s3(files))")
    }
}
