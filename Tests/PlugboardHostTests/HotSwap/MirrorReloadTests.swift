#if canImport(Glibc)
import Foundation
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// MirrorStorage in the host: the stack rebuilt right when any of its three plugins is
/// reloaded, under load; and a whole migration from one FileStorage to another, ending
/// with the reload that drops the old one, with no failed request and no object lost.
@Suite("MirrorStorage in the host: migrations and hot swap", .serialized)
struct MirrorReloadTests {
    static func files(_ name: String, root: String, rank: Int = 0) -> String {
        #"{"name": "\#(name)", "product": "FileStorage", "environments": ["testing"], "rank": \#(rank), "config": {"root": "\#(root)"}}"#
    }

    static func mirror(concurrency: Int = 4, enabled: Bool = true) -> String {
        #"{"name": "Mirror", "product": "MirrorStorage", "environments": ["testing"], "wraps": "Old", "requires": ["New"], "config": {"to": "New", "concurrency": \#(concurrency), "pageSize": 20, "startDelaySeconds": 0}}"#
    }

    static func stack(old: String = "data-old", new: String = "data-new", concurrency: Int = 4) -> [String] {
        [files("Old", root: old), files("New", root: new, rank: -1), mirror(concurrency: concurrency)]
    }

    /// Reloads from `from` to `to` under load: applied, `changing` changed, no request failed.
    static func reload(_ folder: HotSwapFolder, _ host: PluginHost, to: [String], changing: [String],
                       removing: [String] = []) async throws {
        _ = try await LayerLoad.reload(folder, host, to: to, changing: changing, removing: removing)
    }

    /// Waits until the mirror's checkpoint says the copy has finished (the bound says it hung).
    static func waitUntilFinished(_ folder: HotSwapFolder) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: "\(folder.path)/Mirror.mirror-checkpoint", encoding: .utf8),
               text.contains("finished 1") { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the mirror's copy did not finish")
    }

    static func start(_ plugins: [String]) async throws -> (HotSwapFolder, PluginHost) {
        let folder = HotSwapFolder()
        try folder.write(plugins.joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        #expect(host.records.allSatisfy { $0.state == .active }, "\(host.records.map { $0.error.map { "\($0)" } ?? "-" })")
        return (folder, host)
    }

    @Test func aReloadOfTheNewBackend_rebuildsTheMirrorOverItsNewBuild() async throws {
        let (folder, host) = try await Self.start(Self.stack())
        defer { Task { await host.shutdown() } }
        try await Self.reload(folder, host, to: Self.stack(new: "data-new-2"), changing: ["New", "Mirror"])
        let storage: any ObjectStorage = try host.container.resolve()
        let before = LayerReloadTests.fileCount("\(folder.path)/data-new")
        _ = try await storage.put("after", data: [1], contentType: nil, metadata: [:])
        #expect(LayerReloadTests.fileCount("\(folder.path)/data-new") == before)
        #expect(LayerReloadTests.fileCount("\(folder.path)/data-new-2") >= 1)
        #expect(host.container.registrations(owner: "Mirror").map(\.wraps) == ["Old"])
    }

    @Test func aReloadOfTheOldBackend_orOfTheMirrorAlone_rebuildsTheStackRight() async throws {
        let (folder, host) = try await Self.start(Self.stack())
        defer { Task { await host.shutdown() } }
        try await Self.reload(folder, host, to: Self.stack(old: "data-old-2"), changing: ["Old", "Mirror"])
        try await Self.reload(folder, host, to: Self.stack(old: "data-old-2", concurrency: 2), changing: ["Mirror"])
        let storage: any ObjectStorage = try host.container.resolve()
        let (old, new) = (LayerReloadTests.fileCount("\(folder.path)/data-old-2"), LayerReloadTests.fileCount("\(folder.path)/data-new"))
        let oldFirst = LayerReloadTests.fileCount("\(folder.path)/data-old")
        _ = try await storage.put("after-both", data: [2], contentType: nil, metadata: [:])
        #expect(LayerReloadTests.fileCount("\(folder.path)/data-old-2") == old + 1)
        #expect(LayerReloadTests.fileCount("\(folder.path)/data-new") == new + 1)
        #expect(LayerReloadTests.fileCount("\(folder.path)/data-old") == oldFirst)
        #expect(host.container.registrations().map(\.owner) == ["Mirror", "Old", "New"])
    }

    @Test func aMirrorWhoseNewBackendIsDisabled_failsToLoad_namingIt() async throws {
        let disabled = #"{"name": "New", "product": "MemoryStorage", "environments": ["testing"], "enabled": false}"#
        let folder = HotSwapFolder()
        try folder.write([Self.files("Old", root: "data-old"), disabled, Self.mirror()].joined(separator: ", "))
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let record = try #require(host.records.first { $0.name == "Mirror" })
        #expect(record.state == .failed)
        #expect(record.error?.message.contains(#"plugin "Mirror" requires plugin "New""#) == true, "\(String(describing: record.error))")
    }

    /// The issue's goal, in process: a running store moves from one FileStorage to
    /// another under load, then a reload drops the old one; every object is there, byte for byte.
    @Test func aWholeMigration_underLoad_losesNoObject_andFailsNoRequest() async throws {
        let (folder, host) = try await Self.start([Self.files("Old", root: "data-old")])
        defer { Task { await host.shutdown() } }
        let before: any ObjectStorage = try host.container.resolve()
        let count = 120
        for i in 0..<count {
            _ = try await before.put("obj/\(i)", data: Array("object \(i)".utf8), contentType: "text/plain", metadata: ["n": "\(i)"])
        }
        try await Self.reload(folder, host, to: Self.stack(), changing: [])
        try await Self.waitUntilFinished(folder)
        try await Self.reload(folder, host, to: [Self.files("New", root: "data-new")], changing: ["New"], removing: ["Old", "Mirror"])
        let after: any ObjectStorage = try host.container.resolve()
        #expect(host.container.registrations().map(\.owner) == ["New"])
        for i in 0..<count {
            let object = try await after.get("obj/\(i)")
            #expect(object.data == Array("object \(i)".utf8))
            #expect(object.info.contentType == "text/plain" && object.info.metadata == ["n": "\(i)"])
        }
        for t in 0..<4 { _ = try await after.get("load/\(t)") }
    }
}
