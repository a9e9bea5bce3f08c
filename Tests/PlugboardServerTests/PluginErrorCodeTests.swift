#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import PlugboardTesting
import Testing

/// A plugin's own error codes through the native API: the status its `mapErrors` gave
/// each, with the plugin's code and message in the body; a code it did not map stays 500.
/// CodedErrorPlugin (Tests/Fixtures) is the real .so, loaded and reloaded by a real host.
@Suite(.serialized) struct PluginErrorCodeTests {
    static let quota = #"{"quota.exceeded": {"status": 403, "s3Code": "QuotaExceeded"}, "quota.busy": {"status": 503, "s3Code": "SlowDown"}}"#

    static func plugin(mappings: String, label: String = "fixture") -> String {
        #"{"name": "Coded", "product": "CodedErrorPlugin", "config": {"label": "\#(label)", "mappings": \#(mappings)}}"#
    }

    /// A host over `plugins` (JSON objects), hot swap on, its preflight child the built
    /// `plugboard`; the manifest is rewritten as an editor saves it.
    struct Fixture {
        let folder: String
        var manifest: String { "\(folder)/plugins.json" }

        init() throws { folder = try LeasePerRequestTests.temporaryFolder() }

        func write(_ plugins: String) throws {
            let text = #"{"schemaVersion": 1, "environment": "testing", "hotSwap": {"enabled": true, "debounceMilliseconds": 0}, "plugins": [\#(plugins)]}"#
            let fd = open(manifest + ".new", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(fd >= 0)
            _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
            rename(manifest + ".new", manifest)
        }

        func start() async throws -> PluginHost {
            let products = PluginUnderTest.productsFolder
            return try await PluginHost.start(.init(manifestPath: manifest, cacheDirectory: "\(folder)/cache",
                                                    productSearchPath: [products], preflightExecutable: "\(products)/plugboard"))
        }
    }

    static func router(_ host: PluginHost) -> APIRouter {
        APIRouter(host: host, apiToken: nil, adminToken: nil, metrics: ServerMetrics(), logger: .disabled, openConnections: { 0 })
    }

    static func put(_ target: String) -> HTTPRequest {
        HTTPRequest(head: RequestHead(method: "PUT", target: target, version: .http11,
                                      headers: HTTPHeaders([("host", "test"), ("content-type", "text/plain")]),
                                      framing: .length(2), keepAlive: true, expectsContinue: false),
                    body: Array("hi".utf8))
    }

    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    @Test func aMappedCode_answersItsStatus_withThePluginsCodeAndMessage() async throws {
        let fixture = try Fixture()
        try fixture.write(Self.plugin(mappings: Self.quota))
        let host = try await fixture.start()
        #expect(host.records.first?.state == .active, "\(host.records)")
        let router = Self.router(host)

        let refused = await router.respond(to: Self.put("/v1/objects/refuse/quota.exceeded/a"))
        let body = String(decoding: refused.body, as: UTF8.self)
        #expect(refused.status == 403, "\(body)")
        #expect(Self.header(refused, "X-Plugboard-Error-Code") == "quota.exceeded")
        #expect(Self.header(refused, "Content-Type") == "application/json")
        #expect(body.contains(#""code":"quota.exceeded""#), "\(body)")
        #expect(body.contains(#"fixture refuses \"refuse/quota.exceeded/a\""#), "\(body)")
        #expect(body.contains("The key asks for code quota.exceeded."), "\(body)")
        #expect(Self.header(refused, "Retry-After") == nil)

        // Every operation that throws the code answers it the same way; HEAD by its header.
        let get = await router.respond(to: LeasePerRequestTests.get("/v1/objects/refuse/quota.exceeded/a"))
        #expect(get.status == 403)
        let busy = await router.respond(to: LeasePerRequestTests.get("/v1/objects/refuse/quota.busy/a"))
        #expect(busy.status == 503)
        #expect(Self.header(busy, "Retry-After") == "1")

        // A code the plugin did not map: 500, with its code and texts, as before.
        let other = await router.respond(to: LeasePerRequestTests.get("/v1/objects/refuse/quota.other/a"))
        let otherBody = String(decoding: other.body, as: UTF8.self)
        #expect(other.status == 500, "\(otherBody)")
        #expect(otherBody.contains(#""code":"quota.other""#), "\(otherBody)")
        // And the storage's own codes keep theirs.
        let missing = await router.respond(to: LeasePerRequestTests.get("/v1/objects/nothing"))
        #expect(missing.status == 404)
        let stored = await router.respond(to: Self.put("/v1/objects/fine"))
        #expect((200...201).contains(stored.status))
        await host.shutdown()
    }

    /// The mapping is the plugin's registration: a reload that changes it applies with
    /// the commit, and a plugin reloaded without it leaves its codes at 500.
    @Test func aReloadThatChangesTheMapping_takesEffectWithTheCommit() async throws {
        let fixture = try Fixture()
        try fixture.write(Self.plugin(mappings: Self.quota))
        let host = try await fixture.start()
        let router = Self.router(host)
        #expect(await router.respond(to: Self.put("/v1/objects/refuse/quota.exceeded/a")).status == 403)

        try fixture.write(Self.plugin(mappings: #"{"quota.exceeded": {"status": 409, "s3Code": "QuotaConflict"}}"#, label: "second"))
        let changed = await host.reload(trigger: "test")
        #expect(changed.result == .applied, "\(changed.error.map { "\($0)" } ?? "")")
        let after = await router.respond(to: Self.put("/v1/objects/refuse/quota.exceeded/a"))
        #expect(after.status == 409)
        #expect(String(decoding: after.body, as: UTF8.self).contains("second refuses"))
        // quota.busy is no longer mapped by the generation now current.
        #expect(await router.respond(to: LeasePerRequestTests.get("/v1/objects/refuse/quota.busy/a")).status == 500)

        try fixture.write(Self.plugin(mappings: "{}", label: "third"))
        let removed = await host.reload(trigger: "test")
        #expect(removed.result == .applied, "\(removed.error.map { "\($0)" } ?? "")")
        #expect(await router.respond(to: Self.put("/v1/objects/refuse/quota.exceeded/a")).status == 500)
        await host.shutdown()
    }

    /// A mapping a plugin may not claim fails the plugin's load, naming the code, the
    /// status and the allowed ones; a reload to it is refused and the old mapping stays.
    @Test func aForbiddenStatus_failsTheLoad_andAReloadToItIsRefused() async throws {
        let fixture = try Fixture()
        try fixture.write(Self.plugin(mappings: #"{"quota.exceeded": {"status": 401, "s3Code": "QuotaExceeded"}}"#))
        let failed = try await fixture.start()
        let record = try #require(failed.records.first)
        #expect(record.state == .failed, "\(failed.records)")
        #expect(record.error?.code == .errorMappingInvalid)
        #expect(record.error?.message == #"cannot map error code "quota.exceeded" to status 401"#, "\(record.error.map { "\($0)" } ?? "")")
        #expect(record.error?.detail?.contains("Allowed statuses: 400, 403") == true)
        await failed.shutdown()

        try fixture.write(Self.plugin(mappings: Self.quota))
        let host = try await fixture.start()
        let router = Self.router(host)
        try fixture.write(Self.plugin(mappings: #"{"storage.not_found": {"status": 404, "s3Code": "NoSuchKey"}}"#, label: "bad"))
        let refused = await host.reload(trigger: "test")
        #expect(refused.result != .applied)
        #expect(refused.error.map { "\($0)" }?.contains("plugin.error_mapping_invalid") == true, "\(refused.error.map { "\($0)" } ?? "")")
        #expect(await router.respond(to: Self.put("/v1/objects/refuse/quota.exceeded/a")).status == 403)
        await host.shutdown()
    }
}
