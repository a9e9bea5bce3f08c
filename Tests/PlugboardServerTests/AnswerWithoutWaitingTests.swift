import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import PlugboardTesting
import Testing

/// A GET or HEAD the bound storage can read at once is answered on the event loop without a task
/// (`APIRouter.respondWithoutWaiting`): the answer must be the one the task would give,
/// byte for byte, and everything the storage would wait for goes to the task.
@Suite struct AnswerWithoutWaitingTests {
    typealias Provider = ContainerProvider

    static func router(_ storage: any ObjectStorage, token: String? = nil) async throws -> (APIRouter, Provider) {
        let provider = Provider()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        return (APIRouter(provider: provider, apiToken: token, logger: .disabled), provider)
    }

    static func request(_ method: String, _ target: String, _ headers: [(String, String)] = []) -> HTTPRequest {
        RouterOverProviderTests.request(method, target, headers: headers)
    }

    @Test func everyReadAnsweredAtOnce_isTheAnswerTheTaskGives() async throws {
        let storage = InMemoryObjectStorage()
        let info = try await storage.put("a/b", data: Array("hello, world".utf8), contentType: "text/plain",
                                         metadata: ["origin": "test", "b": "2"])
        let (router, _) = try await Self.router(storage)
        let etag = "\"\(info.etag)\""
        let cases: [(String, [(String, String)], Int)] = [
            ("/v1/objects/a%2Fb", [], 200),
            ("/v1/objects/a%2Fb", [("range", "bytes=0-4")], 206),
            ("/v1/objects/a%2Fb", [("range", "bytes=-3")], 206),
            ("/v1/objects/a%2Fb", [("range", "bytes=7-")], 206),
            ("/v1/objects/a%2Fb", [("range", "bytes=0-1,3-4")], 200),
            ("/v1/objects/a%2Fb", [("range", "bytes=0-1"), ("range", "bytes=3-4")], 200),
            ("/v1/objects/a%2Fb", [("range", "lines=1-2")], 200),
            ("/v1/objects/a%2Fb", [("if-none-match", etag)], 304),
            ("/v1/objects/a%2Fb", [("if-match", "\"0123\"")], 412),
            ("/v1/objects/a%2Fb", [("if-modified-since", info.lastModified.httpDate)], 304),
            ("/v1/objects/missing", [], 404),
            ("/v1/objects/a%00b", [], 400),
            ("/v1/objects/%ZZ", [], 400),
            ("/healthz", [], 200),
            ("/readyz", [], 200),
        ]
        for (target, headers, status) in cases {
            let request = Self.request("GET", target, headers)
            let atOnce = try #require(router.respondWithoutWaiting(to: request).atOnce, "GET \(target) \(headers) was not answered at once")
            let task = await router.respond(to: request)
            #expect(atOnce.status == status, "GET \(target) \(headers): \(atOnce.status)")
            #expect(atOnce.status == task.status, "GET \(target) \(headers)")
            #expect(atOnce.headers.map { "\($0.0): \($0.1)" } == task.headers.map { "\($0.0): \($0.1)" }, "GET \(target) \(headers)")
            #expect(atOnce.stream == nil)
            #expect(atOnce.body == (try await RouterOverProviderTests.body(of: task)), "GET \(target) \(headers)")
        }
    }

    @Test func everyHeadAnsweredAtOnce_isTheAnswerTheTaskGives() async throws {
        let storage = InMemoryObjectStorage()
        let info = try await storage.put("a/b", data: Array("hello, world".utf8), contentType: "text/plain",
                                         metadata: ["origin": "test"])
        let (router, _) = try await Self.router(storage)
        let cases: [(String, [(String, String)], Int)] = [
            ("/v1/objects/a%2Fb", [], 200),
            ("/v1/objects/a%2Fb", [("range", "bytes=0-4")], 200),
            ("/v1/objects/a%2Fb", [("if-none-match", "\"\(info.etag)\"")], 304),
            ("/v1/objects/a%2Fb", [("if-match", "\"0123\"")], 412),
            ("/v1/objects/missing", [], 404),
            ("/v1/objects/%ZZ", [], 400),
        ]
        for (target, headers, status) in cases {
            let request = Self.request("HEAD", target, headers)
            let atOnce = try #require(router.respondWithoutWaiting(to: request).atOnce, "HEAD \(target) \(headers) was not answered at once")
            let task = await router.respond(to: request)
            #expect(atOnce.status == status, "HEAD \(target) \(headers): \(atOnce.status)")
            #expect(atOnce.status == task.status, "HEAD \(target) \(headers)")
            #expect(atOnce.headers.map { "\($0.0): \($0.1)" } == task.headers.map { "\($0.0): \($0.1)" }, "HEAD \(target) \(headers)")
            #expect(atOnce.headLength == task.headLength, "HEAD \(target) \(headers)")
        }
    }

    @Test func whatWouldWait_orIsNotARead_goesToTheTask() async throws {
        let storage = InMemoryObjectStorage()
        _ = try await storage.put("k", data: Array("hello".utf8), contentType: nil, metadata: [:])
        let (router, _) = try await Self.router(storage)
        // A 416 names the object's size, which takes a head the storage may wait for.
        #expect(router.respondWithoutWaiting(to: Self.request("GET", "/v1/objects/k", [("range", "bytes=100-")])).atOnce == nil)
        #expect(await router.respond(to: Self.request("GET", "/v1/objects/k", [("range", "bytes=100-")])).status == 416)
        // An empty object has no first byte to read at once: its HEAD is the task's.
        _ = try await storage.put("empty", data: [], contentType: nil, metadata: [:])
        #expect(await router.respond(to: Self.request("HEAD", "/v1/objects/empty")).status == 200)
        for (method, target) in [("HEAD", "/v1/objects/empty"), ("DELETE", "/v1/objects/k"), ("GET", "/v1/objects"),
                                 ("GET", "/v1/objects?prefix=k")] {
            #expect(router.respondWithoutWaiting(to: Self.request(method, target)).atOnce == nil, "\(method) \(target)")
        }
        // A storage that does not implement the read at once (the API's default) is read by the task.
        let (plain, _) = try await Self.router(AtOnceStorage(storage, readsAtOnce: false))
        #expect(plain.respondWithoutWaiting(to: Self.request("GET", "/v1/objects/k")).atOnce == nil)
        #expect(await plain.respond(to: Self.request("GET", "/v1/objects/k")).status == 200)
    }

    @Test func refusals_areTheSameAtOnce() async throws {
        let storage = InMemoryObjectStorage()
        _ = try await storage.put("k", data: [1], contentType: nil, metadata: [:])
        let (router, _) = try await Self.router(storage, token: "token-1")
        // Unscreened requests (a router used without the server) are screened here too.
        let unauthorized = try #require(router.respondWithoutWaiting(to: Self.request("GET", "/v1/objects/k")).atOnce)
        #expect(unauthorized.status == 401)
        let authorized = try #require(router.respondWithoutWaiting(
            to: Self.request("GET", "/v1/objects/k", [("authorization", "Bearer token-1")])).atOnce)
        #expect(authorized.status == 200)
        #expect(authorized.body == [1])

        let refusing = Provider(refusal: PlugboardError(.noStorage, "required plugin FileStorage is not active"))
        try await refusing.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        let notReady = APIRouter(provider: refusing, apiToken: nil, logger: .disabled)
        let refused = try #require(notReady.respondWithoutWaiting(to: Self.request("GET", "/v1/objects/k")).atOnce)
        #expect(refused.status == 503)
        #expect(refused.status == (await notReady.respond(to: Self.request("GET", "/v1/objects/k"))).status)
        #expect(try #require(notReady.respondWithoutWaiting(to: Self.request("GET", "/readyz")).atOnce).status == 503)
    }

    @Test func theAnswerCarriesItsGeneration_andLeavesNoLease() async throws {
        let host = try await LeasePerRequestTests.emptyHost()
        let events = Events()
        let storage = AtOnceStorage(readsAtOnce: true, events: events)
        _ = try await storage.put("k", data: [7], contentType: nil, metadata: [:])
        try await host.container.transaction(owner: "p") { tx in
            try tx.register((any ObjectStorage).self, managed: true) { _ in storage }
        }
        let router = APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(),
                               logger: .disabled, openConnections: { 0 })
        let answer = try #require(router.respondWithoutWaiting(to: LeasePerRequestTests.get("/v1/objects/k")).atOnce)
        #expect(answer.status == 200)
        #expect(answer.headers.contains { $0.0 == "X-Plugboard-Generation" && $0.1 == String(host.container.generation) })
        _ = host.container.unregisterAll(owner: "p")
        await host.container.awaitPendingStops()
        #expect(events.entries.contains("stop"), "a lease was left behind: \(events.entries)")
        await host.shutdown()
    }

    /// What the storage has to wait for goes on as a task with the request as resolved at
    /// once (one request path): the same answer as the task path's, stamped with the
    /// generation the at-once step leased, and that lease held until the answer is made.
    @Test func aReadThatWaits_goesOnFromWhereTheAtOncePathWas_withItsLease() async throws {
        let host = try await LeasePerRequestTests.emptyHost()
        let events = Events()
        let storage = AtOnceStorage(readsAtOnce: false, events: events)
        _ = try await storage.put("k", data: [7, 8], contentType: nil, metadata: [:])
        try await host.container.transaction(owner: "p") { tx in
            try tx.register((any ObjectStorage).self, managed: true) { _ in storage }
        }
        let leased = host.container.generation
        let router = APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(),
                               logger: .disabled, openConnections: { 0 })
        guard case .later(let rest) = router.respondWithoutWaiting(to: LeasePerRequestTests.get("/v1/objects/k")) else {
            Issue.record("a read the storage waits for was not handed on as a task")
            return
        }
        // The storage is replaced before the task runs: the request keeps the one it leased.
        _ = host.container.unregisterAll(owner: "p")
        #expect(!events.entries.contains("stop"), "stopped under a request's lease: \(events.entries)")
        let answer = await rest()
        #expect(answer.status == 200)
        #expect(try await RouterOverProviderTests.body(of: answer) == [7, 8])
        #expect(answer.headers.contains { $0.0 == "X-Plugboard-Generation" && $0.1 == String(leased) })
        await host.container.awaitPendingStops()
        #expect(events.entries.contains("stop"), "a lease was left behind: \(events.entries)")
        await host.shutdown()
    }
}

extension ImmediateAnswer {
    /// The answer made at once, or nil when the request goes on as a task.
    var atOnce: HTTPResponse? {
        if case .answer(let answer) = self { return answer }
        return nil
    }
}

/// An in-memory storage that reads at once or not (`readsAtOnce`), and says when it stops
/// (a managed service when registered as one).
private final class AtOnceStorage: ForwardingStorage, ManagedService {
    let base: InMemoryObjectStorage
    private let readsAtOnce: Bool
    private let events: Events?

    init(_ base: InMemoryObjectStorage = InMemoryObjectStorage(), readsAtOnce: Bool, events: Events? = nil) {
        self.base = base
        self.readsAtOnce = readsAtOnce
        self.events = events
    }

    func start() async throws {}
    func stop() async { events?.append("stop") }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        readsAtOnce ? try base.getWithoutWaiting(key, range: range) : nil
    }
}
