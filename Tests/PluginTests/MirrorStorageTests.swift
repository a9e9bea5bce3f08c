import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport
import PlugboardTesting
import Testing

/// libMirrorStorage.so over two MemoryStorage backends, loaded as a manifest would list
/// them (the mirror `wraps` the old one and names the new one in `to`): the conformance
/// suite through the layer, and the refusals of a wrong `to`.
@Suite struct MirrorStorageTests {
    static func entries(to: String = "New", config: [String: ConfigValue] = [:], newRank: Int = -1,
                        requires: [String]? = nil) -> [PluginUnderTest.Entry] {
        let checkpoint = BuildProducts.temporaryFolder("mirror-plugin") + "/Mirror.mirror-checkpoint"
        return [
            .init(product: "MemoryStorage", name: "Old"),
            .init(product: "MemoryStorage", name: "New", rank: newRank),
            .init(product: "MirrorStorage", name: "Mirror",
                  config: ["to": .string(to), "checkpoint": .string(checkpoint)].merging(config) { $1 }, wraps: "Old",
                  requires: requires ?? [to]),
        ]
    }

    @Test func passesTheWholeConformanceSuite_asTheLayer_notEitherBackend() async throws {
        let plugins = try await PluginUnderTest.load(Self.entries())
        let mirror = plugins[2]
        defer { Task { await mirror.shutdown() } }
        let report = await mirror.objectStorageConformance().run()
        try report.requireAllPassed()
        // Observed from below (the kit's observer over the wrapped plugin): ranged and
        // at-once reads go down as they are.
        #expect(report.result(named: "layer_keeps_reads_streamed")?.outcome == .passed, "\(report)")
        // What the suite resolved is the mirror: a put through it reaches both backends.
        _ = try await mirror.storage().put("mirror-proof", data: [1], contentType: nil, metadata: [:])
        let infos = mirror.container.registrations()
        #expect(infos.first { $0.owner == "Mirror" }?.wraps == "Old")
        #expect(infos.first { $0.owner == "Mirror" }?.isActive == true)
    }

    @Test func aToNamingNoProvider_isRefused_naming_it() async throws {
        let error = await #expect(throws: PlugboardError.self) {
            _ = try await PluginUnderTest.load(Self.entries(to: "Nowhere"))
        }
        let cause = error?.code == .notRegistered ? error : error?.underlying as? PlugboardError
        #expect(cause?.code == .notRegistered, "\(String(describing: error))")
        #expect(cause?.message.contains("\"Nowhere\"") == true, "\(String(describing: error))")
    }

    /// The two ways a migration manifest goes silently wrong without a refusal: the new
    /// backend outranking the old one (everything would be served by the new backend
    /// alone, the mirror never asked), and `to` missing from `requires` (a reload of the
    /// new backend would leave the mirror writing to its retired build).
    @Test func aNewBackendOutrankingTheOld_orNotRequired_isRefused_naming_the_fix() async throws {
        let outranked = await #expect(throws: PlugboardError.self) {
            _ = try await PluginUnderTest.load(Self.entries(newRank: 1))
        }
        #expect(outranked?.code == .layerOutranked, "\(String(describing: outranked))")
        #expect(outranked?.message.contains("\"New\" outranks \"Old\"") == true, "\(String(describing: outranked))")
        let unrequired = await #expect(throws: PlugboardError.self) {
            _ = try await PluginUnderTest.load(Self.entries(requires: []))
        }
        #expect(unrequired?.code == .ownerNotRequired, "\(String(describing: unrequired))")
        #expect(unrequired?.hint?.contains("Add \"New\" to \"requires\" in the manifest entry \"Mirror\"") == true)
    }

    @Test func aToNamingTheMirror_orAnUnknownKey_isAConfigError() async throws {
        for (to, config) in [("Mirror", [String: ConfigValue]()), ("New", ["concurrency": .integer(0)]), ("New", ["speed": .integer(1)])] {
            let error = await #expect(throws: PlugboardError.self) {
                _ = try await PluginUnderTest.load(Self.entries(to: to, config: config))
            }
            let cause = error?.code == .configInvalid ? error : error?.underlying as? PlugboardError
            #expect(cause?.code == .configInvalid, "\(String(describing: error))")
        }
    }
}
