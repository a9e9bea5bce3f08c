#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
@testable import PlugboardHost
import Testing

/// The worker an isolated plugin's preflight started becomes the plugin's worker only for
/// the load it mapped: the same build (digest and copy), config, rank and settings. In the
/// hot swap suite, serialized with it (its reaping check reads this process's children).
extension ReloadTests {
    @Test func aPreflightsWorker_isHandedOnlyToTheLoadItMapped() async throws {
        let folder = HotSwapFolder()
        let configuration = folder.configuration()
        let loader = try PluginLoader(container: Container(environment: .testing),
                                      configuration: .init(cacheDirectory: "\(folder.path)/cache",
                                                           processEnvironment: configuration.processEnvironment,
                                                           workerLauncher: configuration.workerLauncher))
        let build = try loader.stage(path: LoaderFixtures.product("MisbehavingPlugin"), name: "Flaky", pin: nil).result.get()
        // Another digest of the same plugin: one byte more past the ELF's end.
        let rebuilt = try LoaderFixtures.copy(LoaderFixtures.product("MisbehavingPlugin"), to: folder.path) { $0.append(0) }
        let other = try loader.stage(path: rebuilt, name: "Flaky", pin: nil).result.get()
        #expect(other.sha256 != build.sha256)
        let settings = WorkerSettings(spare: false)
        func config(_ label: String) -> PluginConfig { PluginConfig(["label": .string(label)], plugin: "Flaky") }
        // What the load asks, and whether the preflight's worker (build, "one", rank 0) may serve it.
        let cases: [(staged: StagedPlugin, label: String, rank: Int, settings: WorkerSettings, handed: Bool)] = [
            (build, "one", 0, settings, true),
            (build, "two", 0, settings, false),
            (other, "one", 0, settings, false),
            (build, "one", 1, settings, false),
            (build, "one", 0, WorkerSettings(spare: false, maxCrashes: 2), false),
        ]
        for load in cases {
            let preflight = try loader.isolatedPlugin("Flaky", path: build.loadPath, sha256: build.sha256, config: config("one"), rank: 0,
                                                      secrets: .none, settings: settings)
            _ = try await preflight.startFirst()
            let pid = try #require(preflight.pid)
            let prepared = await loader.prepareIsolated(load.staged, config: config(load.label), rank: load.rank, requires: nil,
                                                        secrets: .none, settings: load.settings, checked: preflight)
            let worker = try #require(prepared.record.worker, "\(prepared.record.error.map(String.init(describing:)) ?? "")")
            #expect((worker === preflight) == load.handed, "\(load.label) \(load.rank) \(load.staged.sha256.prefix(8))")
            #expect((worker.pid == pid) == load.handed)
            if !load.handed {
                #expect(preflight.status == .stopped)
                #expect(kill(pid, 0) != 0, "the preflight's worker \(pid) runs on beside the new one")
            }
            await worker.stop()
        }
    }

    @Test func aPreflightsWorkerThatDied_isNotHandedOver() async throws {
        let folder = HotSwapFolder()
        let configuration = folder.configuration()
        let loader = try PluginLoader(container: Container(environment: .testing),
                                      configuration: .init(cacheDirectory: "\(folder.path)/cache",
                                                           processEnvironment: configuration.processEnvironment,
                                                           workerLauncher: configuration.workerLauncher))
        let build = try loader.stage(path: LoaderFixtures.product("MisbehavingPlugin"), name: "Flaky", pin: nil).result.get()
        let settings = WorkerSettings(spare: false)
        let config = PluginConfig([:], plugin: "Flaky")
        let preflight = try loader.isolatedPlugin("Flaky", path: build.loadPath, sha256: build.sha256, config: config, rank: 0,
                                                  secrets: .none, settings: settings)
        _ = try await preflight.startFirst()
        let pid = try #require(preflight.pid)
        kill(-pid, SIGKILL)
        // Its reaper has seen it go once the supervisor no longer names its pid; it is not
        // replaced, since it served nothing yet.
        let bound = ContinuousClock.now + .seconds(60)
        while preflight.pid != nil, ContinuousClock.now < bound { try await Task.sleep(for: .milliseconds(10)) }
        #expect(preflight.pid == nil)
        let prepared = await loader.prepareIsolated(build, config: config, rank: 0, requires: nil, secrets: .none, settings: settings,
                                                    checked: preflight)
        let worker = try #require(prepared.record.worker)
        #expect(worker !== preflight && worker.pid != pid)
        #expect(preflight.status == .stopped)
        await worker.stop()
    }

    /// A fleet host's start: the worker that passed the preflight is the one that serves.
    @Test func aCheckedStart_servesAnIsolatedPluginWithThePreflightsWorker() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.misbehaving(#"{"seed": 1}"#, extra: #", "isolation": "process""#))
        var configuration = folder.configuration()
        let passed = PreflightPIDs()
        configuration.logger = Logger(label: "test", logLevel: .info, handler: passed)
        guard case .started(let host) = try await PluginHost.startChecked(configuration) else {
            Issue.record("a checked start refused the isolated fixture")
            return
        }
        let worker = try #require(host.records.first?.worker)
        #expect(passed.pids.count == 1 && passed.pids.first == worker.pid, "\(passed.pids) \(String(describing: worker.pid))")
        let storage: any ObjectStorage = try host.container.resolve()
        #expect(try await storage.get("seed-0").data == Array("seed 0".utf8))
        await host.shutdown()
    }

    /// What the sandbox refuses at start, a fleet host's start and `fleet set`'s preflight
    /// refuse with the sandbox's code, before anything is mapped here.
    @Test func aCheckedStartAndAFleetPreflight_refuseWhatTheSandboxRefusesAtStart() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.misbehaving(#"{"fault": "execve", "faultIn": "start"}"#, extra: #", "isolation": "process""#))
        guard case .refused(let error) = try await PluginHost.startChecked(folder.configuration()) else {
            Issue.record("a checked start took a plugin its sandbox refuses")
            return
        }
        #expect(error.code == .sandboxSyscallRefused && error.message.contains("execve"), "\(error)")
        let fleet = await #expect(throws: PlugboardError.self) { try await PluginHost.preflightAsReload(folder.configuration()) }
        #expect(fleet?.code == .sandboxSyscallRefused)
    }
}

/// The pids the preflight logs for the isolated plugins that passed in their workers.
final class PreflightPIDs: LogHandler {
    private let seen = LockedValueBox<[Int32]>([])
    var pids: [Int32] { seen.withLock { $0 } }

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        guard message == "isolated plugin passed its preflight in its worker", case .string(let pid)? = metadata["pid"] else { return }
        seen.withLock { $0.append(Int32(pid) ?? -1) }
    }
}
