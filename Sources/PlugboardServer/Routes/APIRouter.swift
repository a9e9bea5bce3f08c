import PlugboardAPI
import PlugboardHTTP
import PlugboardHost

/// The HTTP API (docs/openapi.yaml) over a started host: objects through the bound
/// `ObjectStorage`, listing, health, readiness, metrics and admin reports.
public final class APIRouter: HTTPHandler {
    let host: PluginHost
    let apiToken: String?
    let adminToken: String?
    let metrics: ServerMetrics
    let logger: Logger
    /// Open connections, for `/metrics` (the server is made after the router).
    let openConnections: @Sendable () -> Int

    public init(host: PluginHost, apiToken: String?, adminToken: String?, metrics: ServerMetrics, logger: Logger,
                openConnections: @escaping @Sendable () -> Int) {
        self.host = host
        self.apiToken = apiToken
        self.adminToken = adminToken
        self.metrics = metrics
        self.logger = logger
        self.openConnections = openConnections
    }

    public func screen(_ head: RequestHead) -> HTTPResponse? {
        let route = Route(path: head.path)
        guard route != .unknown else {
            return ErrorResponses.response(PlugboardError(.httpNotFound, "no route for \(head.path.prefix(200))",
                hint: "The API serves /v1/objects, /v1/objects/{key}, /healthz, /readyz, /metrics and /v1/admin/*; see docs/openapi.yaml."))
        }
        guard route.allowedMethods.contains(head.method) else {
            return ErrorResponses.response(route.methodRefusal(head.method))
        }
        return authorize(route, head)
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        // Error answers withhold server paths; this request's log keeps them (ErrorResponses).
        await ErrorResponses.$context.withValue(.init(logger: logger, host: host)) { await route(request) }
    }

    private func route(_ request: HTTPRequest) async -> HTTPResponse {
        // The server screened the head already when it read it (it says so on the request).
        if !request.screened, let refusal = screen(request.head) { return refusal }
        let route = Route(path: request.head.path)
        do throws(HTTPError) {
            switch route {
            case .object(let encoded):
                if let refusal = notReady() { return refusal }
                // The lease by hand rather than through withLease: one async frame (and
                // slab allocation) fewer on the busiest route; released on every way out.
                let lease = host.container.lease()
                defer { lease.release() }
                return Self.stamped(await ObjectRoutes.object(encodedKey: encoded, request: request, storage: storage(lease)), lease)
            case .listing:
                if let refusal = notReady() { return refusal }
                return await host.container.withLease { lease in
                    Self.stamped(await ObjectRoutes.listing(query: request.head.query, storage: storage(lease)), lease)
                }
            case .healthz:
                return Self.json(200, "{\"status\":\"ok\"}\n")
            case .readyz:
                return readiness()
            case .metrics:
                return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                                    body: Array((metrics.render(plugins: host.records, openConnections: openConnections())
                                                 + ServerMetrics.renderHotSwap(host)).utf8))
            case .adminPlugins:
                return Self.json(200, Reports.adminPlugins(host).render() + "\n")
            case .adminReload:
                return await AdminRoutes.reload(host)
            case .adminEvents:
                return AdminRoutes.events(host, query: request.head.query)
            case .adminServices:
                return Self.json(200, Reports.services(host.container.registrations()).render() + "\n")
            case .unknown:
                throw HTTPError.badRequest("no route")
            }
        } catch {
            return ErrorResponses.response(error)
        }
    }

    public func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse {
        ErrorResponses.response(error)
    }

    public func completed(_ exchange: Exchange) {
        let route = exchange.target == "-" ? Route.noneIndex : Route(path: Self.path(of: exchange.target)).index
        metrics.record(route: route, method: exchange.method, status: exchange.status, seconds: exchange.durationSeconds)
        logger.info("\(exchange.method) \(exchange.target.prefix(1024)) \(exchange.status) \(exchange.bytes)B \(Self.milliseconds(exchange.durationSeconds))ms",
                    metadata: ["peer": .string(exchange.peer)])
    }

    /// The storage the host binds now, through the request's lease: resolved per request,
    /// so a swap takes effect on the next one, and held for the request, so a storage
    /// replaced meanwhile is not stopped until the requests using it have answered.
    func storage(_ resolver: some ServiceResolver) -> Result<any ObjectStorage, PlugboardError> {
        do throws(PlugboardError) {
            return .success(try resolver.resolve((any ObjectStorage).self, name: nil))
        } catch where error.code == .notRegistered {
            return .failure(PlugboardError(.notRegistered, "no ObjectStorage is bound in the \(host.environment) environment",
                detail: "Plugins: \(host.records.map { "\($0.name) is \($0.state)" }.joined(separator: ", ")).",
                hint: "Enable a storage plugin for this environment in plugins.json; plugboard check shows why one failed."))
        } catch {
            return .failure(error)
        }
    }

    private func authorize(_ route: Route, _ head: RequestHead) -> HTTPResponse? {
        // Authorization is no list field (RFC 9110 11.6.2): with two, which one counts
        // depends on who reads them (a proxy may check the last, this server the first),
        // so neither does.
        let authorizations = head.headers.values("authorization").count
        guard authorizations <= 1 else {
            return ErrorResponses.response(PlugboardError(.httpBadRequest, "more than one Authorization header",
                detail: "Expected at most one Authorization header, found \(authorizations).",
                hint: "Send a single Authorization: Bearer <token> header."))
        }
        let token: String?
        switch route.tokenGuard {
        case .none: return nil
        case .api: token = apiToken
        case .admin: token = adminToken
        }
        guard let token else { return nil }
        let header = head.headers["authorization"]
        if BearerToken.matches(header, token: token) { return nil }
        let variable = route.tokenGuard == .admin ? "PLUGBOARD_ADMIN_TOKEN" : "PLUGBOARD_API_TOKEN"
        return ErrorResponses.response(PlugboardError(.httpUnauthorized,
            header == nil ? "missing bearer token" : "wrong bearer token",
            detail: "This path requires Authorization: Bearer <token>.",
            hint: "Send the token the server was started with in \(variable)."))
    }

    /// The generation whose services answered: the one the request's lease pinned.
    static func stamped(_ response: HTTPResponse, _ lease: Lease) -> HTTPResponse {
        var r = response
        r.headers.append(("X-Plugboard-Generation", String(lease.generation)))
        return r
    }

    /// 503 for object routes while a required plugin is not active (with hot swap on,
    /// the server keeps running until a reload fixes it).
    private func notReady() -> HTTPResponse? {
        guard !host.allRequiredActive, let failure = host.requiredFailure else { return nil }
        var response = ErrorResponses.response(PlugboardError(.httpUnavailable, failure.message, detail: failure.detail,
            hint: "Fix the plugin and reload (plugboard reload, SIGHUP, or save plugins.json); /readyz answers 503 until then."),
            status: 503)
        // No lease was taken; the generation that refused is the one current now.
        response.headers.append(("X-Plugboard-Generation", String(host.container.generation)))
        return response
    }

    private func readiness() -> HTTPResponse {
        var reasons: [String] = host.requiredFailures.map { "required plugin \"\($0.name)\" is \($0.state)" }
        // Readiness only asks whether a storage is bound; it uses none, so it takes no lease.
        if case .failure(let error) = storage(host.container) { reasons.append(error.message) }
        if reasons.isEmpty { return Self.json(200, "{\"status\":\"ready\"}\n") }
        let body = JSONOutput.object([("status", "unavailable"), ("reasons", .array(reasons.map { .string($0) }))])
        return Self.json(503, body.render(pretty: false) + "\n")
    }

    static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
    }

    static func path(of target: String) -> Substring {
        // By byte: `firstIndex(of: Character)` walks grapheme clusters, once per answer.
        target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
    }

    static func milliseconds(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10_000).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
