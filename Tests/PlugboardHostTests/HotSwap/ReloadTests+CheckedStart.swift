import PlugboardAPI
@testable import PlugboardHost
import Testing

/// `PluginHost.startChecked` (a fleet host's start) refuses what a reload refuses, before
/// anything is mapped in the host. In the hot swap suite, serialized with it: its check
/// that every preflight child was reaped sees this process's children, these ones too.
extension ReloadTests {
    /// What a running host's reload refuses, and the code it refuses it with (the
    /// health check's own, for the last).
    static let startRefusals: [(plugins: String, code: PlugboardError.Code?)] = [
        (HotSwapFolder.store("MemoryStorage") + ", " + HotSwapFolder.misbehaving(#"{"fault": "fatalError"}"#, name: "Bad"), .preflightCrashed),
        (HotSwapFolder.store("MemoryStorage") + #", {"name": "Extra", "product": "NoSuchStorage", "environments": ["testing"]}"#,
         .productNotFound),
        (HotSwapFolder.store("MemoryStorage") + ", " + HotSwapFolder.misbehaving(#"{"healthy": false}"#, name: "Sick"), nil),
    ]

    /// The first case would kill this process with SIGILL had the start mapped the plugin.
    @Test(arguments: 0..<3) func aCheckedStart_refusesWhatAReloadRefuses_withTheSameCode(_ index: Int) async throws {
        let (plugins, code) = Self.startRefusals[index]
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.store("MemoryStorage"))
        let running = try await PluginHost.start(folder.configuration())
        defer { Task { await running.shutdown() } }
        try folder.write(plugins)
        let reload = await running.reload(trigger: "test")
        #expect(reload.result == .refused)
        switch try await PluginHost.startChecked(folder.configuration()) {
        case .started(let host):
            await host.shutdown()
            Issue.record("a checked start took what the reload refused (\(reload.error?.code.rawValue ?? "-"))")
        case .refused(let error):
            #expect(error.code == reload.error?.code)
            if let code { #expect(error.code == code) }
        }
    }

    @Test func aCheckedStart_takesWhatAReloadTakes() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.store("MemoryStorage"))
        guard case .started(let host) = try await PluginHost.startChecked(folder.configuration()) else {
            Issue.record("a checked start refused MemoryStorage")
            return
        }
        defer { Task { await host.shutdown() } }
        #expect(host.records.first?.state == .active)
        let _: any ObjectStorage = try host.container.resolve()
    }

    @Test func aCheckedStart_refusesAManifestThatDoesNotParse_withoutThrowing() async throws {
        let folder = HotSwapFolder()
        try LoaderFixtures.write(Array("{\"plugins\": 3}".utf8), to: folder.manifest)
        guard case .refused(let error) = try await PluginHost.startChecked(folder.configuration()) else {
            Issue.record("a manifest that does not parse started")
            return
        }
        #expect(error.code.area == "manifest")
    }
}
