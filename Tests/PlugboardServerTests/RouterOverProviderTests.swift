import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import PlugboardTesting
import Testing

/// The router over a `StorageProvider` that is not a `PluginHost`: a container of the
/// test's own. The object, listing, health and readiness routes work over it alone; the
/// routes that report on or act on a plugin host are unknown there.
@Suite struct RouterOverProviderTests {
    @Test func objectsGoThroughTheProvidersStorage_andHostRoutesAreUnknown() async throws {
        let provider = ContainerProvider()
        let storage = InMemoryObjectStorage()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        let router = APIRouter(provider: provider, apiToken: nil, logger: .disabled)

        let put = await router.respond(to: Self.request("PUT", "/v1/objects/a%2Fb", body: Array("hello".utf8)))
        #expect(put.status == 201 || put.status == 200, "PUT answered \(put.status)")
        #expect(try await storage.get("a/b").data == Array("hello".utf8))

        let get = await router.respond(to: Self.request("GET", "/v1/objects/a%2Fb"))
        #expect(get.status == 200)
        #expect(try await Self.body(of: get) == Array("hello".utf8))
        #expect(get.headers.contains { $0.0 == "X-Plugboard-Generation" && $0.1 == String(provider.container.generation) })

        let listing = await router.respond(to: Self.request("GET", "/v1/objects"))
        #expect(listing.status == 200)
        #expect(String(decoding: listing.body, as: UTF8.self).contains("\"a/b\""))

        #expect(await router.respond(to: Self.request("GET", "/readyz")).status == 200)
        #expect(await router.respond(to: Self.request("GET", "/healthz")).status == 200)
        for path in ["/metrics", "/v1/admin/plugins", "/v1/admin/services", "/v1/admin/events"] {
            let r = await router.respond(to: Self.request("GET", path))
            #expect(r.status == 404, "\(path) answered \(r.status)")
        }
        #expect(await router.respond(to: Self.request("POST", "/v1/admin/reload")).status == 404)
    }

    /// InMemoryObjectStorage whose listing, like S3's ListObjectsV2, carries neither
    /// content type nor metadata.
    struct ListsWithoutTypes: ForwardingStorage {
        let base = InMemoryObjectStorage()
        func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
            let page = try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
            return ObjectListing(objects: page.objects.map { info in
                ObjectInfo(key: info.key, size: info.size, etag: info.etag, lastModified: info.lastModified,
                           unknown: [.contentType, .metadata])
            }, nextContinuationToken: page.nextContinuationToken)
        }
    }

    @Test(arguments: [false, true])
    func aListingSaysNullForWhatTheStorageDoesNotKnow(listingKnows: Bool) async throws {
        let provider = ContainerProvider()
        let storage: any ObjectStorage = listingKnows ? InMemoryObjectStorage() : ListsWithoutTypes()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        _ = try await storage.put("k", data: [1], contentType: "text/csv", metadata: ["a": "b"])
        let router = APIRouter(provider: provider, apiToken: nil, logger: .disabled)
        let listing = await router.respond(to: Self.request("GET", "/v1/objects"))
        #expect(listing.status == 200)
        let text = String(decoding: listing.body, as: UTF8.self)
        let fields = listingKnows ? #""contentType":"text/csv","lastModified""# : #""contentType":null,"lastModified""#
        #expect(text.contains(fields), "\(text)")
        #expect(text.contains(listingKnows ? #""metadata":{"a":"b"}"# : #""metadata":null"#), "\(text)")
        // A HEAD has them either way.
        let head = await router.respond(to: Self.request("HEAD", "/v1/objects/k"))
        #expect(head.headers.contains { $0.0 == "Content-Type" && $0.1 == "text/csv" })
    }

    @Test func nothingBound_isNotReady_andObjectRoutesSayWhy() async throws {
        let router = APIRouter(provider: ContainerProvider(), apiToken: nil, logger: .disabled)
        let get = await router.respond(to: Self.request("GET", "/v1/objects/k"))
        #expect(get.status == 503)
        #expect(get.headers.contains { $0.0 == "X-Plugboard-Error-Code" && $0.1 == "container.not_registered" })
        let ready = await router.respond(to: Self.request("GET", "/readyz"))
        #expect(ready.status == 503)
        #expect(String(decoding: ready.body, as: UTF8.self).contains("unavailable"))
    }

    @Test func aProvidersRefusal_is503_andItsSecretsNeverShow() async throws {
        let secret = "s3cr3t-value-42"
        let provider = ContainerProvider(refusal: PlugboardError(.requiredPluginFailed, "required plugin \"p\" is failed",
                                                                 detail: "it said \(secret)"),
                                         secrets: [secret])
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: InMemoryObjectStorage())
        }
        let router = APIRouter(provider: provider, apiToken: "token-1", logger: .disabled)
        let get = await router.respond(to: Self.request("GET", "/v1/objects/k", headers: [("authorization", "Bearer token-1")]))
        #expect(get.status == 503)
        let text = String(decoding: get.body, as: UTF8.self)
        #expect(text.contains("required plugin"))
        #expect(!text.contains(secret), "\(text)")
        // The token still guards the objects.
        #expect(await router.respond(to: Self.request("GET", "/v1/objects/k")).status == 401)
        let ready = await router.respond(to: Self.request("GET", "/readyz"))
        #expect(ready.status == 503)
        #expect(String(decoding: ready.body, as: UTF8.self).contains("required plugin"))
    }

    static func request(_ method: String, _ target: String, headers: [(String, String)] = [],
                        body: [UInt8] = []) -> HTTPRequest {
        var fields: [(name: String, value: String)] = [("host", "test")] + headers.map { (name: $0.0, value: $0.1) }
        if !body.isEmpty { fields.append(("content-length", String(body.count))) }
        return HTTPRequest(head: RequestHead(method: method, target: target, version: .http11,
                                             headers: HTTPHeaders(fields),
                                             framing: body.isEmpty ? .none : .length(body.count),
                                             keepAlive: true, expectsContinue: false),
                           body: body)
    }

    static func body(of response: HTTPResponse) async throws -> [UInt8] {
        guard let stream = response.stream else { return response.body }
        var out: [UInt8] = []
        while let piece = try await stream.next() { out += piece }
        return out
    }
}
