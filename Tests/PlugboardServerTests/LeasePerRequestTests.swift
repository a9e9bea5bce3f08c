#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
import PlugboardServer
import Testing

/// Each object request holds a lease for as long as it runs: a storage swapped out while a
/// request is using it is stopped only after that request has answered, and the next
/// request is already served by the new one (the hot swap the server has to survive).
@Suite struct LeasePerRequestTests {
    @Test func aStorageReplacedDuringARequest_stopsOnlyAfterThatRequestAnswered() async throws {
        let host = try await Self.emptyHost()
        let events = Events()
        let v1 = GatedStorage("v1", events)
        let v2 = GatedStorage("v2", events)
        try await host.container.transaction(owner: "p") { tx in
            try tx.register((any ObjectStorage).self, managed: true) { _ in v1 }
        }
        let router = APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(),
                               logger: .disabled, openConnections: { 0 })

        let first = Task { await router.respond(to: Self.get("/v1/objects/k")) }
        try await events.waitFor("get v1 entered")

        try await host.container.transaction(owner: "p") { tx in
            try tx.replace((any ObjectStorage).self, managed: true) { _ in v2 }
        }
        await host.container.awaitPendingStops()
        #expect(!events.entries.contains("stop v1"), "v1 stopped while a request was using it: \(events.entries)")

        // The next request goes to v2 at once.
        v2.open()
        let second = await router.respond(to: Self.get("/v1/objects/k"))
        #expect(second.status == 200)
        #expect(events.entries.contains("get v2 answered"))
        #expect(!events.entries.contains("stop v1"))

        // The first request finishes on v1; only then is v1 stopped.
        v1.open()
        let answered = await first.value
        #expect(answered.status == 200)
        await host.container.awaitPendingStops()
        let log = events.entries
        let answeredAt = try #require(log.firstIndex(of: "get v1 answered"), "\(log)")
        let stoppedAt = try #require(log.firstIndex(of: "stop v1"), "v1 was never stopped: \(log)")
        #expect(answeredAt < stoppedAt, "\(log)")
        await host.shutdown()
    }

    @Test func readinessAndListing_releaseTheirLeases() async throws {
        let host = try await Self.emptyHost()
        let events = Events()
        let v1 = GatedStorage("v1", events)
        v1.open()
        try await host.container.transaction(owner: "p") { tx in
            try tx.register((any ObjectStorage).self, managed: true) { _ in v1 }
        }
        let router = APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(),
                               logger: .disabled, openConnections: { 0 })
        #expect(await router.respond(to: Self.get("/readyz")).status == 200)
        #expect(await router.respond(to: Self.get("/v1/objects?prefix=a")).status == 200)
        // No lease is left behind: unregistering stops v1 right away.
        _ = host.container.unregisterAll(owner: "p")
        await host.container.awaitPendingStops()
        #expect(events.entries.contains("stop v1"), "\(events.entries)")
        await host.shutdown()
    }

    static func get(_ target: String) -> HTTPRequest {
        HTTPRequest(head: RequestHead(method: "GET", target: target, version: .http11, headers: HTTPHeaders([("host", "test")]),
                                      framing: .none, keepAlive: true, expectsContinue: false),
                    body: [])
    }

    /// A host started from a manifest with no plugins, in a fresh folder.
    static func emptyHost() async throws -> PluginHost {
        try await host(plugins: "[]", in: temporaryFolder())
    }

    static func temporaryFolder() throws -> String {
        var template = Array("/tmp/plugboard-server-test-XXXXXX".utf8CString)
        return try #require(template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        })
    }

    /// A host started from a manifest in `folder` whose `plugins` array is `plugins` (JSON).
    static func host(plugins: String, in folder: String) async throws -> PluginHost {
        let manifest = "\(folder)/plugins.json"
        let text = Array(#"{"schemaVersion": 1, "plugins": "#.utf8) + Array(plugins.utf8) + Array("}".utf8)
        let fd = open(manifest, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return try await PluginHost.start(.init(manifestPath: manifest, environment: .testing, cacheDirectory: "\(folder)/cache"))
    }
}

/// What the storages did, in order.
final class Events: @unchecked Sendable {
    // @unchecked Sendable: `list` is only touched under `lock`.
    private let lock = TestMutex()
    private var list: [String] = []

    func append(_ entry: String) { lock.locked { list.append(entry) } }
    var entries: [String] { lock.locked { list } }

    /// Waits until `entry` has happened (a liveness bound of 60 s for a loaded machine).
    func waitFor(_ entry: String) async throws {
        for _ in 0..<6000 {
            if entries.contains(entry) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("\"\(entry)\" did not happen in 60 s: \(entries)")
    }
}

/// A pthread mutex, for the test's own bookkeeping.
final class TestMutex: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}

/// A managed storage whose `get` waits until the test opens it.
final class GatedStorage: ObjectStorage, ManagedService {
    let label: String
    let events: Events
    private let gate: AsyncStream<Void>
    private let opener: AsyncStream<Void>.Continuation

    init(_ label: String, _ events: Events) {
        self.label = label
        self.events = events
        (gate, opener) = AsyncStream<Void>.makeStream()
    }

    /// Lets every `get`, now and later, answer.
    func open() { opener.finish() }

    func start() async throws { events.append("start \(label)") }
    func stop() async { events.append("stop \(label)") }

    func get(_ key: String) async throws -> StoredObject {
        events.append("get \(label) entered")
        for await _ in gate {}
        events.append("get \(label) answered")
        let info = ObjectInfo(key: key, size: 1, etag: "55a54008ad1ba589aa210d2629c1df41", contentType: "text/plain",
                              lastModified: Timestamp.now(), metadata: [:])
        return StoredObject(info: info, data: [1])
    }

    func head(_ key: String) async throws -> ObjectInfo { try await get(key).info }
    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        throw PlugboardError(.storageFailed, "GatedStorage stores nothing")
    }
    func delete(_ key: String) async throws {}
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        ObjectListing(objects: [], nextContinuationToken: nil)
    }
}
