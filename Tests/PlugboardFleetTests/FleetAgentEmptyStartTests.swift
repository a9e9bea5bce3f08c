import PlugboardFleet
import PlugboardHost
import PlugboardTestSupport
import Testing

/// A host started before the fleet has any manifest (its first `fleet set` comes later)
/// starts from the empty manifest, which the host must be able to read: it then serves
/// not-ready instead of exiting.
@Suite struct FleetAgentEmptyStartTests {
    @Test func noManifestInEtcd_startsFromAnEmptyManifestThatParses() async throws {
        let folder = BuildProducts.temporaryFolder("fleet-none-yet")
        let copy = FleetLocalCopy(folder: folder)
        let agent = FleetAgent(store: InMemoryFleetStore(),
                               configuration: .init(keys: FleetKeys(prefix: "/t"), hostID: "h1", localCopy: copy, version: "0.1.0"))
        let plan = try await agent.prepare()
        #expect(plan.startedFrom == "empty")
        let manifest = try Manifest.load(path: copy.manifestPath)
        #expect(manifest.plugins.isEmpty)
    }
}
