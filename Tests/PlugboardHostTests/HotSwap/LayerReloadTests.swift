#if canImport(Glibc)
import Foundation
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
@testable import PlugboardHost
import Testing

/// Requests through the container, each under its own lease as the server takes them,
/// from several tasks at once until stopped: every failure is kept.
final class LayerLoad: Sendable {
    private let counts = LockedValueBox((ok: 0, failures: [String]()))
    private let stopped = LockedValueBox(false)
    private let runner: Task<Void, Never>

    init(_ container: Container, tasks: Int) {
        let counts = self.counts
        let stopped = self.stopped
        runner = Task {
            await withTaskGroup(of: Void.self) { group in
                for t in 0..<tasks {
                    group.addTask {
                        var n = 0
                        while !stopped.withLock({ $0 }) {
                            n += 1
                            do {
                                try await container.withLease { lease in
                                    let storage: any ObjectStorage = try lease.resolve()
                                    _ = try await storage.put("load/\(t)", data: Array(repeating: UInt8(n & 0xFF), count: 100),
                                                              contentType: nil, metadata: [:])
                                    _ = try await storage.get("load/\(t)")
                                }
                                counts.withLock { $0.ok += 1 }
                            } catch {
                                counts.withLock { $0.failures.append("\(error)") }
                            }
                        }
                    }
                }
            }
        }
    }

    var ok: Int { counts.withLock { $0.ok } }

    /// Waits until `more` requests beyond those served now have succeeded: the load is
    /// running (and, after a reload, served by the new generation).
    func waitForProgress(_ more: Int) async throws {
        let target = ok + more
        let deadline = ContinuousClock.now + .seconds(300)
        while ok < target {
            #expect(ContinuousClock.now < deadline, "the load made no progress")
            guard ContinuousClock.now < deadline else { return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Puts `host` under load, writes `to` into `folder`, reloads while the load runs and
    /// checks that the reload applied, changed `changing` (and removed `removing`, when
    /// given) and failed no request before, during or after it: the load goes on until the
    /// new generation has served. Answers what the load saw.
    static func reload(_ folder: HotSwapFolder, _ host: PluginHost, to: [String], changing: [String],
                       removing: [String]? = nil) async throws -> (ok: Int, failures: [String]) {
        let load = LayerLoad(host.container, tasks: 4)
        try await load.waitForProgress(50)
        try folder.write(to.joined(separator: ", "))
        let outcome = await host.reload(trigger: "test")
        #expect(outcome.result == .applied, "\(outcome.error.map { "\($0)" } ?? "")")
        #expect(outcome.changed == changing)
        if let removing { #expect(outcome.removed == removing) }
        try await load.waitForProgress(50)
        let seen = await load.stop()
        #expect(seen.failures == [], "\(seen.failures.prefix(3))")
        return seen
    }

    /// Stops the load and answers what it saw.
    func stop() async -> (ok: Int, failures: [String]) {
        stopped.withLock { $0 = true }
        await runner.value
        return counts.withLock { $0 }
    }
}

/// Issue 24's two silent mistakes, through the host, under load: a QuotaStorage layer
/// over FileStorage, hot-swapped with either plugin changing.
@Suite("Layers in the host: hot swap rebuilds the stack", .serialized)
struct LayerReloadTests {
    static func files(root: String) -> String {
        #"{"name": "Files", "product": "FileStorage", "environments": ["testing"], "config": {"root": "\#(root)"}}"#
    }

    static func quota(maxBytes: Int, wraps: String? = "Files", extra: String = "") -> String {
        let wrapping = wraps.map { #", "wraps": "\#($0)""# } ?? ""
        return #"{"name": "Quota", "product": "QuotaStorage", "environments": ["testing"]\#(wrapping), "config": {"maxBytes": \#(maxBytes)}\#(extra)}"#
    }

    /// Regular files under `path`, recursively.
    static func fileCount(_ path: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var count = 0
        while let name = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(path)/\(name)", isDirectory: &isFolder), !isFolder.boolValue { count += 1 }
        }
        return count
    }

    /// Starts a host on `from`, puts it under load, reloads to `to` while the load runs
    /// and checks that the reload applied, changed `changing`, and failed no request
    /// before, during or after it (the load goes on until the new generation has served).
    static func reloadUnderLoad(from: [String], to: [String], changing: [String]) async throws -> (HotSwapFolder, PluginHost) {
        let folder = HotSwapFolder()
        try folder.write(from.joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        let seen = try await LayerLoad.reload(folder, host, to: to, changing: changing)
        #expect(seen.ok >= 100)
        return (folder, host)
    }

    @Test func theStackServes_andAPutPastTheQuotaIsRefusedWithThePluginsCode() async throws {
        let folder = HotSwapFolder()
        try folder.write([Self.quota(maxBytes: 4096), Self.files(root: "data")].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        #expect(host.records.map(\.state) == [.active, .active], "\(host.records.map { $0.error.map { "\($0)" } ?? "-" })")
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("small", data: Array(repeating: 1, count: 4000), contentType: nil, metadata: [:])
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("big", data: Array(repeating: 2, count: 200), contentType: nil, metadata: [:])
        }
        #expect(refused?.code.rawValue == "quota.exceeded")
        #expect(refused?.message.contains("maxBytes is 4096 bytes") == true, "\(String(describing: refused))")
        // Its storage layer (beside it, the registration of its error code's mapping).
        let quota = host.container.registrations(owner: "Quota").filter { $0.wraps != nil }
        #expect(quota.map(\.wraps) == ["Files"] && quota.first?.isActive == true)
    }

    /// The first silent mistake: a reload that changes only the wrapper used to wrap the
    /// previous wrapper, and the old quota kept being enforced.
    @Test func aReloadOfTheLayerAlone_underLoad_enforcesTheNewQuota_withNoFailedRequest() async throws {
        let (_, host) = try await Self.reloadUnderLoad(
            from: [Self.files(root: "data"), Self.quota(maxBytes: 100_000)],
            to: [Self.files(root: "data"), Self.quota(maxBytes: 1_000_000)], changing: ["Quota"])
        defer { Task { await host.shutdown() } }
        // The new quota is what serves, alone: a put only it allows is stored (a new layer
        // over the old one would refuse it), and one past it is refused by it.
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("big", data: Array(repeating: 2, count: 200_000), contentType: nil, metadata: [:])
        let refused = await #expect(throws: PlugboardError.self) {
            _ = try await storage.put("bigger", data: Array(repeating: 3, count: 900_000), contentType: nil, metadata: [:])
        }
        #expect(refused?.message.contains("maxBytes is 1000000 bytes") == true, "\(String(describing: refused))")
        #expect(host.container.registrations().filter { $0.name == nil }.map(\.owner) == ["Quota", "Files"])
        #expect(host.retiredRecords.map(\.name) == ["Quota"])
    }

    /// The second silent mistake: the wrapped plugin's root changed, and the layer kept
    /// writing into the old FileStorage.
    @Test func aReloadOfTheWrappedPlugin_underLoad_rebuildsTheLayerOverTheNewRoot_withNoFailedRequest() async throws {
        let (folder, host) = try await Self.reloadUnderLoad(
            from: [Self.files(root: "data-a"), Self.quota(maxBytes: 10_000_000)],
            to: [Self.files(root: "data-b"), Self.quota(maxBytes: 10_000_000)], changing: ["Files", "Quota"])
        defer { Task { await host.shutdown() } }
        #expect(Set(host.retiredRecords.map(\.name)) == ["Files", "Quota"])
        // PUTs land in the new root, through the new layer.
        let inA = Self.fileCount("\(folder.path)/data-a")
        let inB = Self.fileCount("\(folder.path)/data-b")
        let storage: any ObjectStorage = try host.container.resolve()
        for i in 0..<3 {
            _ = try await storage.put("after/\(i)", data: [UInt8(i)], contentType: nil, metadata: [:])
        }
        #expect(Self.fileCount("\(folder.path)/data-a") == inA)
        #expect(Self.fileCount("\(folder.path)/data-b") == inB + 3)
        let quota = host.container.registrations(owner: "Quota")
        #expect(quota.first?.isActive == true && quota.first?.generation == host.container.generation)
    }

    @Test func aLayerOverADisabledPlugin_fails_namingWraps() async throws {
        let folder = HotSwapFolder()
        let disabled = #"{"name": "Files", "product": "MemoryStorage", "environments": ["testing"], "enabled": false}"#
        let backup = #"{"name": "Backup", "product": "MemoryStorage", "environments": ["testing"]}"#
        try folder.write([disabled, backup, Self.quota(maxBytes: 10)].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let record = try #require(host.records.first { $0.name == "Quota" })
        #expect(record.state == .failed)
        #expect(record.error?.message.contains(#"plugin "Quota" wraps plugin "Files", which is"#) == true,
                "\(String(describing: record.error))")
    }

    @Test func aLayerWithoutWraps_failsToLoad_namingTheServiceAndThePlugin() async throws {
        let folder = HotSwapFolder()
        try folder.write([HotSwapFolder.store("MemoryStorage"), Self.quota(maxBytes: 10, wraps: nil)].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let record = try #require(host.records.first { $0.name == "Quota" })
        #expect(record.error?.code == .layerUndeclared, "\(String(describing: record.error))")
        #expect(record.error?.message.contains("Quota registered a layer of PlugboardAPI.ObjectStorage") == true)
    }
}
