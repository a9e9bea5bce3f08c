import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardJSON

/// The HTTP API (docs/openapi.yaml): objects through the bound `ObjectStorage`, listing,
/// health and readiness over a ``StorageProvider``; metrics and the admin routes over the
/// host that runs the plugins, when there is one.
public final class APIRouter: HTTPHandler {
    let provider: any StorageProvider
    /// Reports, reloads and events; nil for a router over a bare provider, where those
    /// routes are unknown (404).
    let host: PluginHost?
    let apiToken: String?
    let adminToken: String?
    let metrics: ServerMetrics
    let logger: Logger
    /// Error answers: scrubbed of the manifest's secrets and server paths (logged whole).
    let errors: ErrorResponses
    /// Open connections, for `/metrics` (the server is made after the router).
    let openConnections: @Sendable () -> Int
    /// Other front ends' counters (the S3 endpoint's), appended to `/metrics`.
    let moreMetrics: @Sendable () -> String

    /// The router `serve` runs: every route, over the host's plugins.
    public convenience init(host: PluginHost, apiToken: String?, adminToken: String?, metrics: ServerMetrics,
                            logger: Logger, openConnections: @escaping @Sendable () -> Int,
                            moreMetrics: @escaping @Sendable () -> String = { "" }) {
        self.init(provider: host, host: host, apiToken: apiToken, adminToken: adminToken, metrics: metrics,
                  logger: logger, openConnections: openConnections, moreMetrics: moreMetrics)
    }

    /// The object, health and readiness routes over `provider` alone (another front end,
    /// a test over a container of its own).
    public convenience init(provider: any StorageProvider, apiToken: String?, logger: Logger) {
        self.init(provider: provider, host: nil, apiToken: apiToken, adminToken: nil, metrics: ServerMetrics(),
                  logger: logger, openConnections: { 0 }, moreMetrics: { "" })
    }

    private init(provider: any StorageProvider, host: PluginHost?, apiToken: String?, adminToken: String?,
                 metrics: ServerMetrics, logger: Logger, openConnections: @escaping @Sendable () -> Int,
                 moreMetrics: @escaping @Sendable () -> String) {
        self.provider = provider
        self.host = host
        self.apiToken = apiToken
        self.adminToken = adminToken
        self.metrics = metrics
        self.logger = logger
        self.errors = ErrorResponses(logger: logger, provider: provider)
        self.openConnections = openConnections
        self.moreMetrics = moreMetrics
    }

    public func screen(_ head: RequestHead) -> HTTPResponse? {
        screen(head, Route(path: head.path))
    }

    private func screen(_ head: RequestHead, _ route: Route) -> HTTPResponse? {
        guard route != .unknown, host != nil || !route.needsHost else {
            return ErrorResponses.response(PlugboardError(.httpNotFound, "no route for \(head.path.prefix(200))",
                hint: "The API serves /v1/objects, /v1/objects/{key}, /healthz, /readyz, /metrics and /v1/admin/*; see docs/openapi.yaml."))
        }
        guard route.allows(head.method) else {
            return ErrorResponses.response(route.methodRefusal(head.method))
        }
        return authorize(route, head)
    }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let route = Route(path: request.head.path)
        // The server screened the head already when it read it (it says so on the request).
        if !request.screened, let refusal = screen(request.head, route) { return refusal }
        return await respond(to: request, route)
    }

    /// Every route, on a task: after the at-once path handed it on, or for a request with
    /// a body (screened before its body was read).
    private func respond(to request: HTTPRequest, _ route: Route) async -> HTTPResponse {
        // The access log line comes at the end; this one says a slow request has reached
        // the handlers (what an operator chasing a stuck request, or a test, waits for).
        logger.debug("started \(request.head.method) \(request.head.target.prefix(1024))")
        switch route {
        case .object(let encoded):
            if let refusal = notReady() { return refusal }
            switch ObjectRequest.resolve(encodedKey: encoded, request, provider: provider, errors: errors) {
            case .refused(let refusal): return refusal
            case .ready(let object): return object.finish(await ObjectRoutes.object(object))
            }
        case .listing:
            if let refusal = notReady() { return refusal }
            return await provider.container.withLease { lease in
                var response = await ObjectRoutes.listing(query: request.head.query, storage: storage(lease), errors: errors)
                Self.stamp(&response, lease, label: Route.labels[route.index])
                return response
            }
        case .healthz:
            return Self.healthy()
        case .readyz:
            return readiness()
        case .metrics, .adminPlugins, .adminReload, .adminEvents, .adminServices, .unknown:
            return await hostRoute(route, request)
        }
    }

    /// The one request path's start, on the event loop's thread: the route matched once,
    /// the request screened, and health, readiness and a GET or HEAD of an object the
    /// bound storage has at once (``ObjectStorage/getWithoutWaiting(_:range:)``) answered
    /// here, without a task. A GET or HEAD the storage has to wait for goes on as a task
    /// with its ``ObjectRequest`` (key, lease, storage) as resolved here; anything else as
    /// a task with its route.
    public func respondWithoutWaiting(to request: HTTPRequest) -> ImmediateAnswer {
        let route = Route(path: request.head.path)
        if !request.screened, let refusal = screen(request.head, route) { return .answer(refusal) }
        switch route {
        case .object(let encoded) where request.head.method == "GET" || request.head.method == "HEAD":
            logger.debug("started \(request.head.method) \(request.head.target.prefix(1024))")
            if let refusal = notReady() { return .answer(refusal) }
            switch ObjectRequest.resolve(encodedKey: encoded, request, provider: provider, errors: errors) {
            case .refused(let refusal):
                return .answer(refusal)
            case .ready(let object):
                // Each answer straight into `finish`, which consumes it: held in a variable
                // first, its headers' array would be shared, and finish's append would copy it.
                if request.head.method == "GET" {
                    if let answer = ObjectRoutes.getWithoutWaiting(object) { return .answer(object.finish(answer)) }
                } else if let answer = ObjectRoutes.headWithoutWaiting(object) {
                    return .answer(object.finish(answer))
                }
                return .later { object.finish(await ObjectRoutes.object(object)) }
            }
        case .healthz:
            return .answer(Self.healthy())
        case .readyz:
            return .answer(readiness())
        default:
            return .later { [self] in await respond(to: request, route) }
        }
    }

    public func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse {
        ErrorResponses.response(error)
    }

    public func completed(_ exchange: Exchange) {
        // Object and listing answers carry their route's label (stamp); anything else is
        // matched again from its target.
        let route = exchange.target == "-" ? Route.noneIndex
            : exchange.label.flatMap { Route.labelIndex($0) } ?? Route(path: RequestHead.path(of: exchange.target)).index
        metrics.record(route: route, method: exchange.method, status: exchange.status, seconds: exchange.durationSeconds)
        logger.info("\(exchange.method) \(exchange.target.prefix(1024)) \(exchange.status) \(exchange.bytes)B \(Self.milliseconds(exchange.durationSeconds))ms",
                    metadata: ["peer": .string(exchange.peer)])
    }

    /// Metrics and the admin routes, which report on and act on the host's plugins.
    private func hostRoute(_ route: Route, _ request: HTTPRequest) async -> HTTPResponse {
        guard let host, route != .unknown else {
            return ErrorResponses.response(PlugboardError(.httpNotFound, "no route for \(request.head.path.prefix(200))"))
        }
        switch route {
        case .metrics:
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                                body: Array((metrics.render(plugins: host.records, openConnections: openConnections())
                                             + ServerMetrics.renderHotSwap(host) + metrics.renderPluginSamples(host)
                                             + moreMetrics()).utf8))
        case .adminPlugins:
            return Self.json(200, Reports.adminPlugins(host).render() + "\n")
        case .adminReload:
            return await AdminRoutes.reload(host)
        case .adminEvents:
            return AdminRoutes.events(host, query: request.head.query)
        default:
            return Self.json(200, Reports.services(host.container.registrations(), isolated: Reports.isolatedOwners(host.records)).render() + "\n")
        }
    }

    /// The storage bound now, through the request's lease: resolved per request, so a
    /// swap takes effect on the next one, and held for the request, so a storage replaced
    /// meanwhile is not stopped until the requests using it have answered.
    func storage(_ resolver: some ServiceResolver) -> Result<any ObjectStorage, PlugboardError> {
        provider.boundStorage(resolver)
    }

    private func authorize(_ route: Route, _ head: RequestHead) -> HTTPResponse? {
        // Authorization is no list field (RFC 9110 11.6.2): with two, which one counts
        // depends on who reads them (a proxy may check the last, this server the first),
        // so neither does.
        let authorizations = head.headers.count(of: "authorization")
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

    /// The generation whose services answered: the one the request's lease pinned; and
    /// the route's label, for the metrics. In place: a copy of the answer and then an
    /// append to its shared headers copied them, once an answer.
    static func stamp(_ response: inout HTTPResponse, _ lease: Lease, label: String) {
        response.headers.append(("X-Plugboard-Generation", String(lease.generation)))
        response.label = label
    }

    /// 503 for object routes while a required plugin is not active (with hot swap on,
    /// the server keeps running until a reload fixes it).
    private func notReady() -> HTTPResponse? {
        guard let failure = provider.objectRequestsRefusal else { return nil }
        let manifest = host?.manifest.path ?? "the manifest"
        var response = errors.response(PlugboardError(.httpUnavailable, failure.message, detail: failure.detail,
            hint: "Fix the plugin and reload (plugboard reload, SIGHUP, or save \(manifest)); /readyz answers 503 until then."),
            status: 503)
        // No lease was taken; the generation that refused is the one current now.
        response.headers.append(("X-Plugboard-Generation", String(provider.container.generation)))
        return response
    }

    private func readiness() -> HTTPResponse {
        let reasons = provider.notReadyReasons
        if reasons.isEmpty { return Self.json(200, "{\"status\":\"ready\"}\n") }
        let body = JSONOutput.object([("status", "unavailable"), ("reasons", .array(reasons.map { .string($0) }))])
        return Self.json(503, body.render(pretty: false) + "\n")
    }

    /// `/healthz`: the process answers.
    static func healthy() -> HTTPResponse { json(200, "{\"status\":\"ok\"}\n") }

    static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
    }

    static func milliseconds(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10_000).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
