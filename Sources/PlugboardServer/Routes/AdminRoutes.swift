import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardJSON

/// `POST /v1/admin/reload` and `GET /v1/admin/events`: hot swap over HTTP.
enum AdminRoutes {
    /// Runs a reload and answers with its outcome once it is done: 200 when applied or
    /// unchanged, 422 when refused (the error says why; the old generation serves on),
    /// 409 when hot swap is off.
    static func reload(_ host: PluginHost) async -> HTTPResponse {
        let outcome = await host.reload(trigger: "admin")
        let status: Int
        switch outcome.result {
        case .applied, .unchanged: status = 200
        case .refused: status = outcome.error?.code == .hotSwapOff ? 409 : 422
        }
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let code = outcome.error?.code { headers.append(("X-Plugboard-Error-Code", code.rawValue)) }
        return HTTPResponse(status: status, headers: headers, body: Array((outcome.json.render() + "\n").utf8))
    }

    /// The hot-swap events after `since` (default 0: every event still in the ring).
    static func events(_ host: PluginHost, query: Substring?) -> HTTPResponse {
        var since: UInt64 = 0
        if let items = try? PercentDecoding.queryItems(query), let text = items.first(where: { $0.name == "since" })?.value {
            guard let n = UInt64(text) else {
                return ErrorResponses.response(PlugboardError(.httpBadRequest, "invalid since \"\(text.prefix(40))\"",
                    detail: "Expected a sequence number: a whole number of 0 or more.",
                    hint: "Pass the sequence of the last event you saw, or leave since out for every event kept."), status: 400)
            }
            since = n
        }
        let body = JSONOutput.object([
            ("next", .int(Int64(host.events.nextSequence))), ("capacity", .int(Int64(host.events.capacity))),
            ("events", .array(host.events.since(since).map(\.json))),
        ])
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array((body.render() + "\n").utf8))
    }
}
