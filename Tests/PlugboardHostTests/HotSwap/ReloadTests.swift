#if canImport(Glibc)
import Foundation
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
@testable import PlugboardHost
import Testing

/// A manifest in a folder of its own, rewritten as an editor saves (new file, rename).
struct HotSwapFolder {
    let path: String
    var manifest: String { "\(path)/plugins.json" }

    init() { path = LoaderFixtures.temporaryFolder("hot-swap") }

    func write(_ plugins: String, hotSwap: String = #""enabled": true, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 5"#) throws {
        let text = #"{"schemaVersion": 1, "environment": "testing", "hotSwap": {\#(hotSwap)}, "plugins": [\#(plugins)]}"#
        try LoaderFixtures.write(Array(text.utf8), to: manifest + ".new")
        rename(manifest + ".new", manifest)
    }

    /// The host runs with this test process's environment, as `plugboard serve` does with
    /// its own: its preflight children get exactly that (under AddressSanitizer, its
    /// ASAN_OPTIONS, without which a child's expected SIGSEGV becomes ASan's exit 1).
    func configuration() -> PluginHost.Configuration {
        PluginHost.Configuration(manifestPath: manifest, cacheDirectory: "\(path)/cache",
                                 processEnvironment: ProcessEnvironmentSnapshot.capture(),
                                 productSearchPath: [LoaderFixtures.productsFolder],
                                 preflightExecutable: "\(LoaderFixtures.productsFolder)/plugboard")
    }

    static func store(_ product: String, config: String = "{}", extra: String = "") -> String {
        #"{"name": "Store", "product": "\#(product)", "environments": ["testing"], "config": \#(config)\#(extra)}"#
    }

    static func misbehaving(_ config: String, name: String = "Store", extra: String = "") -> String {
        #"{"name": "\#(name)", "path": "\#(LoaderFixtures.product("MisbehavingPlugin"))", "environments": ["testing"], "config": \#(config)\#(extra)}"#
    }
}

@Suite("Hot swap in the host", .serialized)
struct ReloadTests {
    @Test func theModeFollowsTheManifest_theFlags_andProduction() throws {
        let on = HotSwapSettings(enabled: true)
        let off = HotSwapSettings()
        #expect(try PluginHost.hotSwapMode(on, environment: .staging, watchOverride: nil) == .init(enabled: true, watching: true, reason: nil))
        #expect(try PluginHost.hotSwapMode(on, environment: .staging, watchOverride: false).watching == false)
        #expect(try PluginHost.hotSwapMode(on, environment: .staging, watchOverride: false).enabled == true)
        #expect(try PluginHost.hotSwapMode(off, environment: .testing, watchOverride: true).enabled == true)
        #expect(try PluginHost.hotSwapMode(off, environment: .testing, watchOverride: nil).enabled == false)
        #expect(try PluginHost.hotSwapMode(on, environment: .production, watchOverride: nil).enabled == false)
        let allowed = HotSwapSettings(enabled: true, allowInProduction: true)
        #expect(try PluginHost.hotSwapMode(allowed, environment: .production, watchOverride: nil).enabled == true)
        let refused = #expect(throws: PlugboardError.self) {
            try PluginHost.hotSwapMode(off, environment: .production, watchOverride: true)
        }
        #expect(refused?.code == .watchRefused)
        #expect(refused?.hint?.contains("allowInProduction") == true)
    }

    @Test func aSwapOfBackends_isOneGeneration_andTheOldPluginIsRetired() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.store("MemoryStorage"))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let before = host.container.generation
        try folder.write(HotSwapFolder.store("FileStorage", config: #"{"root": "data"}"#))
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.result == .applied, "\(outcome.error.map { "\($0)" } ?? "")")
        #expect(outcome.changed == ["Store"])
        #expect(host.container.generation == before + 1)
        #expect(host.records.first?.state == .active)
        #expect(host.records.first?.generation == before + 1)
        #expect(host.retiredRecords.map(\.name) == ["Store"])
        #expect(host.retiredRecords.first?.state == .retired)
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("k", data: [1], contentType: nil, metadata: [:])
        #expect(access("\(folder.path)/data", F_OK) == 0)
        // The same bytes again: nothing to do.
        let again = await host.reload(trigger: "test")
        #expect(again.result == .unchanged)
        #expect(host.container.generation == before + 1)
        #expect(host.reloads.snapshot.applied == 1 && host.reloads.snapshot.unchanged == 1)
    }

    @Test func aPluginThatCrashesInPreflight_isRefused_andNeverMappedInTheHost() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.store("MemoryStorage"))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let before = host.container.generation
        for (fault, code, words) in [("segfault", PlugboardError.Code.preflightCrashed, "SIGSEGV"),
                                     ("fatalError", .preflightCrashed, "SIGILL"),
                                     ("exit", .preflightExited, "exit status 0")] {
            try folder.write(HotSwapFolder.misbehaving(#"{"fault": "\#(fault)"}"#))
            let outcome = await host.reload(trigger: "test")
            #expect(outcome.result == .refused)
            #expect(outcome.error?.code == code)
            #expect(outcome.error?.message.contains(words) == true, "\(outcome.error?.message ?? "")")
            #expect(outcome.error?.message.contains("plugin \"Store\"") == true)
            #expect(host.container.generation == before)
        }
        // The host never mapped the misbehaving image; the old storage still serves.
        let misbehaving = try Digest.sha256Hex(try PluginFile.readAll(LoaderFixtures.product("MisbehavingPlugin"), plugin: "M"))
        #expect(!MappedImages.shared.all.contains { $0.sha256 == misbehaving && $0.plugins.contains("Store") })
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("still", data: [1], contentType: nil, metadata: [:])
        #expect(host.reloads.snapshot.refused == 3 && !host.reloads.snapshot.lastSuccessful)
    }

    @Test func aConsumerOfAChangedProvider_isReloadedToo() async throws {
        let folder = HotSwapFolder()
        let provider = { (label: String) in HotSwapFolder.misbehaving(#"{"label": "\#(label)"}"#, name: "Provider") }
        let consumer = #"{"name": "Consumer", "product": "MemoryStorage", "environments": ["testing"], "requires": ["Provider"], "rank": 5}"#
        let bystander = #"{"name": "Bystander", "product": "MemoryStorage", "environments": ["testing"], "rank": -5}"#
        try folder.write([provider("one"), consumer, bystander].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        try folder.write([provider("two"), consumer, bystander].joined(separator: ", "))
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.result == .applied, "\(outcome.error.map { "\($0)" } ?? "")")
        #expect(outcome.changed == ["Provider", "Consumer"])
        #expect(Set(host.retiredRecords.map(\.name)) == ["Provider", "Consumer"])
        #expect(host.records.first { $0.name == "Bystander" }?.generation == 3)
    }

    @Test func aRequiredPluginThatStaysBroken_refusesTheReload() async throws {
        let folder = HotSwapFolder()
        let broken = #"{"name": "Needed", "path": "\#(folder.path)/missing.so", "environments": ["testing"], "required": true}"#
        try folder.write([HotSwapFolder.store("MemoryStorage"), broken].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        #expect(host.requiredFailure?.code == .requiredPluginFailed)
        #expect(!host.allRequiredActive)
        try folder.write([HotSwapFolder.store("MemoryStorage", config: #"{"seed": 1}"#), broken].joined(separator: ", "))
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.error?.code == .requiredNotActive)
        // Fixed in the next change: the host becomes ready.
        let fixed = #"{"name": "Needed", "product": "MemoryStorage", "environments": ["testing"], "required": true}"#
        try folder.write([HotSwapFolder.store("MemoryStorage", config: #"{"seed": 1}"#), fixed].joined(separator: ", "))
        let repaired = await host.reload(trigger: "test")
        #expect(repaired.result == .applied, "\(repaired.error.map { "\($0)" } ?? "")")
        #expect(host.requiredFailure == nil && host.allRequiredActive)
    }

    @Test func withHotSwapOff_aReloadIsRefusedAtOnce_andNotCounted() async throws {
        let folder = HotSwapFolder()
        try folder.write(HotSwapFolder.store("MemoryStorage"), hotSwap: #""enabled": false"#)
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.error?.code == .hotSwapOff)
        #expect(outcome.error?.message.contains("restart to apply") == true)
        #expect(host.reloads.snapshot.refused == 0)
    }

    @Test func thePreflightRunner_namesWhatHappened_andHonoursItsTimeout() async throws {
        let folder = HotSwapFolder()
        let loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder.path)/cache"))
        let staged = try loader.stage(path: LoaderFixtures.product("MisbehavingPlugin"), name: "M", pin: nil).result.get()
        let runner = PreflightRunner(executable: "\(LoaderFixtures.productsFolder)/plugboard",
                                     environment: ProcessEnvironmentSnapshot.capture(), logger: .disabled)
        func request(_ config: [String: ConfigValue]) -> PreflightRequest {
            PreflightRequest(environment: .testing, cacheDirectory: "\(folder.path)/cache", plugins: [
                .init(name: "M", path: staged.loadPath, sha256: staged.sha256, rank: 0,
                      config: PluginConfig(config, plugin: "M"))])
        }
        let good = await runner.run(request([:]), timeoutSeconds: 30)
        #expect(good.firstFailure == nil)
        #expect(good.records.map(\.state) == [.active])
        #expect(good.termination == .exited(0))
        let started = MonotonicClock.now()
        let hung = await runner.run(request(["fault": .string("hang"), "faultIn": .string("start")]), timeoutSeconds: 1)
        #expect(hung.termination == .timedOut)
        #expect(hung.culprit?.error.code == .preflightTimeout)
        // Only says it did not hang: the child is killed at 1 s, and a busy machine can take
        // seconds more to start a debug build of it (11.8 s seen with two builds running).
        #expect(MonotonicClock.now() - started < 30)
        let unhealthy = await runner.run(request(["healthy": .bool(false)]), timeoutSeconds: 30)
        #expect(unhealthy.firstFailure?.error.code == .healthCheckFailed)
        let stopCrash = await runner.run(request(["fault": .string("segfault"), "faultIn": .string("stop")]), timeoutSeconds: 30)
        #expect(stopCrash.termination == .signaled(SIGSEGV))
        #expect(stopCrash.culprit?.name == "M")
        // Every preflight child was reaped: none is left among this process's children
        // (read from /proc, not by waitpid(-1), which would reap the children of the
        // other tests running beside this one and steal their exit statuses).
        #expect(Self.preflightChildren().isEmpty, "preflight children left: \(Self.preflightChildren())")
    }

    /// The pids of this process's children (of any of its threads) running `plugboard preflight`.
    static func preflightChildren() -> [Int32] {
        var pids: [Int32] = []
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8) else { continue }
            for pid in text.split(separator: " ").compactMap({ Int32($0) }) {
                guard let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
                if cmdline.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == "preflight" }) { pids.append(pid) }
            }
        }
        return pids
    }

    @Test func pruning_keepsCopiesInUse_andTheMostRecentOnes() throws {
        let folder = LoaderFixtures.temporaryFolder("prune")
        let cache = try PluginCache(directory: folder)
        var names: [String] = []
        for i in 0..<4 {
            let bytes = Array("copy \(i)".utf8)
            let sha = try Digest.sha256Hex(bytes)
            let path = try cache.store(bytes, sha256: sha)
            var times = [timeval(tv_sec: 1_000_000 + i, tv_usec: 0), timeval(tv_sec: 1_000_000 + i, tv_usec: 0)]
            utimes(path, &times)
            names.append("\(sha).so")
        }
        // The oldest is "mapped" by someone: a shared lock held on it.
        let held = open("\(folder)/\(names[0])", O_RDONLY)
        #expect(flock(held, LOCK_SH) == 0)
        defer { close(held) }
        let removed = cache.prune(keeping: 1)
        #expect(Set(removed) == [names[1], names[2]])
        #expect(access("\(folder)/\(names[0])", F_OK) == 0)
        #expect(access("\(folder)/\(names[3])", F_OK) == 0)
    }
}
