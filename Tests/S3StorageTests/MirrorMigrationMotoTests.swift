import Foundation
import PlugboardAPI
import PlugboardConcurrency
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Issue 24's goal: a running store moves from FileStorage to S3Storage (on moto_server)
/// through MirrorStorage, under load, then a reload drops FileStorage: no request fails,
/// and every object is where it should be, checked one by one.
@Suite(.serialized, .pythonTools)
struct MirrorMigrationMotoTests {
    /// Clients writing, reading and deleting their own keys under leases, as the server
    /// serves requests, until stopped; what each acknowledged is kept to check afterwards.
    final class Clients: Sendable {
        struct Seen: Sendable {
            var ok = 0
            var failures: [String] = []
            var stored: [String: [UInt8]] = [:]
            var deleted: Set<String> = []
        }

        private let seen = LockedValueBox(Seen())
        private let stopped = LockedValueBox(false)
        private let runner: Task<Void, Never>

        init(_ container: Container, tasks: Int) {
            let seen = self.seen, stopped = self.stopped
            runner = Task {
                await withTaskGroup(of: Void.self) { group in
                    for t in 0..<tasks {
                        group.addTask {
                            var n = 0
                            while !stopped.withLock({ $0 }) {
                                n += 1
                                let key = "client/\(t)/\(n)", data = Array("client \(t) request \(n)".utf8)
                                do {
                                    try await container.withLease { lease in
                                        let storage: any ObjectStorage = try lease.resolve()
                                        _ = try await storage.put(key, data: data, contentType: "text/plain", metadata: [:])
                                        seen.withLock { $0.stored[key] = data }
                                        if n % 3 == 0 {
                                            let victim = "client/\(t)/\(n - 1)"
                                            try await storage.delete(victim)
                                            seen.withLock { $0.deleted.insert(victim); $0.stored[victim] = nil }
                                        }
                                        _ = try await storage.get(key)
                                    }
                                    seen.withLock { $0.ok += 1 }
                                } catch {
                                    seen.withLock { $0.failures.append("\(key): \(error)") }
                                }
                            }
                        }
                    }
                }
            }
        }

        var ok: Int { seen.withLock { $0.ok } }

        /// Waits until `more` requests beyond those answered now have succeeded.
        func waitForProgress(_ more: Int) async throws {
            let target = ok + more
            let deadline = ContinuousClock.now + .seconds(300)
            while ok < target {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the clients made no progress")
                    return
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        func stop() async -> Seen {
            stopped.withLock { $0 = true }
            await runner.value
            return seen.withLock { $0 }
        }
    }

    static func files(rank: Int = 0) -> String {
        #"{"name": "Files", "product": "FileStorage", "rank": \#(rank), "config": {"root": "data"}}"#
    }

    static func s3(_ server: MotoServer, bucket: String, rank: Int) -> String {
        #"{"name": "S3", "product": "S3Storage", "rank": \#(rank), "config": {"bucket": "\#(bucket)", "endpoint": "\#(server.endpoint)", "region": "us-east-1", "accessKeyId": "\#(MotoServer.accessKeyId)", "secretAccessKey": "\#(MotoServer.secretAccessKey)", "timeoutSeconds": 30, "maxRetries": 2}}"#
    }

    static let mirror = #"{"name": "Mirror", "product": "MirrorStorage", "wraps": "Files", "requires": ["S3"], "config": {"to": "S3", "concurrency": 8, "pageSize": 50, "startDelaySeconds": 1}}"#

    static func write(_ folder: String, _ plugins: [String]) throws {
        let text = #"{"schemaVersion": 1, "environment": "testing", "hotSwap": {"enabled": true, "debounceMilliseconds": 0}, "plugins": [\#(plugins.joined(separator: ", "))]}"#
        try text.write(toFile: "\(folder)/plugins.json.new", atomically: false, encoding: .utf8)
        rename("\(folder)/plugins.json.new", "\(folder)/plugins.json")
    }

    @Test func fileStorageToS3_underLoad_noFailedRequest_noObjectLost() async throws {
        let server = try MotoServer.get()
        let bucket = try server.makeBucket("mirror")
        let folder = BuildProducts.temporaryFolder("mirror-migration")
        try Self.write(folder, [Self.files()])
        let host = try await PluginHost.start(PluginHost.Configuration(
            manifestPath: "\(folder)/plugins.json", environment: .testing, cacheDirectory: "\(folder)/cache",
            processEnvironment: ProcessEnvironmentSnapshot.capture(), productSearchPath: [BuildProducts.folder],
            preflightExecutable: "\(BuildProducts.folder)/plugboard"))
        defer { Task { await host.shutdown() } }

        // The service before the migration: objects in FileStorage.
        let before: any ObjectStorage = try host.container.resolve()
        let count = 300
        for i in 0..<count {
            _ = try await before.put("before/\(i)", data: Array("object \(i)".utf8), contentType: "text/plain", metadata: ["n": "\(i)"])
        }
        let clients = Clients(host.container, tasks: 4)
        try await clients.waitForProgress(30)

        // 1. The mirror over FileStorage, S3 beside it ranked below.
        try Self.write(folder, [Self.files(), Self.s3(server, bucket: bucket, rank: -1), Self.mirror])
        let start = await host.reload(trigger: "test")
        #expect(start.result == .applied && start.added == ["S3", "Mirror"], "\(start.error.map { "\($0)" } ?? "")")

        // 2. The copier finishes (its checkpoint says so) while the clients go on.
        let deadline = ContinuousClock.now + .seconds(300)
        while !((try? String(contentsOfFile: "\(folder)/Mirror.mirror-checkpoint", encoding: .utf8))?.contains("finished 1") ?? false) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the mirror's copy did not finish")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await clients.waitForProgress(30)

        // 3. A reload with S3 alone.
        try Self.write(folder, [Self.s3(server, bucket: bucket, rank: 0)])
        let drop = await host.reload(trigger: "test")
        #expect(drop.result == .applied && drop.removed.sorted() == ["Files", "Mirror"], "\(drop.error.map { "\($0)" } ?? "")")
        try await clients.waitForProgress(30)
        let seen = await clients.stop()
        #expect(seen.failures == [], "\(seen.failures.prefix(3))")

        let after: any ObjectStorage = try host.container.resolve()
        #expect(host.container.registrations().map(\.owner) == ["S3"])
        var lost: [String] = []
        for i in 0..<count {
            guard let object = try? await after.get("before/\(i)"), object.data == Array("object \(i)".utf8),
                  object.info.contentType == "text/plain", object.info.metadata == ["n": "\(i)"] else {
                lost.append("before/\(i)")
                continue
            }
        }
        for (key, data) in seen.stored where (try? await after.get(key))?.data != data { lost.append(key) }
        var resurrected: [String] = []
        for key in seen.deleted where (try? await after.head(key)) != nil { resurrected.append(key) }
        #expect(lost == [], "\(lost.count) lost: \(lost.prefix(5))")
        #expect(resurrected == [], "\(resurrected.count) deleted keys came back: \(resurrected.prefix(5))")
        #expect(seen.stored.count > 0 && seen.deleted.count > 0)
    }
}
