import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
@testable import PlugboardServer
import PlugboardTesting
import Testing

/// A plugin's counter in `/metrics` across a real reload: ContentTypePolicyPlugin (Tests/Fixtures)
/// counts its refusals per instance, a reload that changes its config builds a new one
/// from zero, and the host answers the count the old one reached plus the new one's.
@Suite struct PluginCountersReloadTests {
    static func policy(_ allowed: String) -> String {
        #"{"name": "Backing", "product": "MemoryStorage"}, {"name": "Policy", "product": "ContentTypePolicyPlugin", "wraps": "Backing", "config": {"allowed": [\#(allowed)]}}"#
    }

    static func refusedPut(_ key: String) -> HTTPRequest {
        HTTPRequest(head: RequestHead(method: "PUT", target: "/v1/objects/\(key)", version: .http11,
                                      headers: HTTPHeaders([("host", "test"), ("content-type", "application/json")]),
                                      framing: .length(2), keepAlive: true, expectsContinue: false),
                    body: Array("{}".utf8))
    }

    static func refusals(_ router: APIRouter) async -> String? {
        let text = String(decoding: await router.respond(to: LeasePerRequestTests.get("/metrics")).body, as: UTF8.self)
        let prefix = #"plugboard_policy_refused_total{plugin="Policy"} "#
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    @Test func aCounter_continuesAcrossAReload_thatRebuildsItsPlugin() async throws {
        let fixture = try PluginErrorCodeTests.Fixture()
        try fixture.write(Self.policy(#""text/plain""#))
        let host = try await fixture.start()
        #expect(host.records.allSatisfy { $0.state == .active }, "\(host.records)")
        let router = PluginErrorCodeTests.router(host)
        for i in 0..<3 { #expect(await router.respond(to: Self.refusedPut("a\(i)")).status == 415) }
        #expect(await Self.refusals(router) == "3")

        try fixture.write(Self.policy(#""text/plain", "image/png""#))
        let reloaded = await host.reload(trigger: "test")
        #expect(reloaded.result == .applied, "\(reloaded.error.map { "\($0)" } ?? "")")
        #expect(await router.respond(to: Self.refusedPut("b")).status == 415)
        #expect(await Self.refusals(router) == "4")
        await host.shutdown()
    }
}
