import PlugboardAPI
@testable import PlugboardHTTP
import PlugboardHost
import PlugboardServer
import Testing

/// A request with two `Authorization` headers is refused with 400, whatever their order
/// and wherever it goes: once, the first won, so a right token followed by a wrong one
/// passed here while a proxy that checks the last one would have refused it.
@Suite struct AuthorizationHeaderTests {
    static let api = "api-s3cret", admin = "admin-s3cret"

    static func head(_ target: String, authorization: [String]) -> RequestHead {
        RequestHead(method: "GET", target: target, version: .http11,
                    headers: HTTPHeaders([("Host", "test")] + authorization.map { ("Authorization", $0) }),
                    framing: .none, keepAlive: true, expectsContinue: false)
    }

    @Test func twoAuthorizationHeaders_areRefusedWith400_inEitherOrder_onEveryRoute() async throws {
        let host = try await LeasePerRequestTests.emptyHost()
        let router = APIRouter(host: host, apiToken: Self.api, adminToken: Self.admin, metrics: ServerMetrics(),
                               logger: .disabled, openConnections: { 0 })
        let right = "Bearer \(Self.api)", wrong = "Bearer nope"
        // One header: the token decides, as before.
        #expect(router.screen(Self.head("/v1/objects", authorization: [right])) == nil)
        #expect(router.screen(Self.head("/v1/objects", authorization: [wrong]))?.status == 401)

        for target in ["/v1/objects", "/v1/objects/k", "/v1/admin/plugins", "/healthz"] {
            for pair in [[right, wrong], [wrong, right], [right, right]] {
                let refusal = try #require(router.screen(Self.head(target, authorization: pair)), "\(target) \(pair)")
                #expect(refusal.status == 400, "\(target) \(pair)")
                #expect(refusal.headers.contains { $0.0 == "X-Plugboard-Error-Code" && $0.1 == "http.bad_request" })
                let body = String(decoding: refusal.body, as: UTF8.self)
                #expect(body.contains("more than one Authorization header"), "\(body)")
                #expect(body.contains("found 2"), "\(body)")
                // The tokens are not echoed.
                #expect(!body.contains("s3cret"), "\(body)")
            }
        }
        // The whole request path answers the same.
        let answer = await router.respond(to: HTTPRequest(head: Self.head("/v1/admin/plugins",
            authorization: ["Bearer \(Self.admin)", wrong]), body: []))
        #expect(answer.status == 400)
        await host.shutdown()
    }
}
