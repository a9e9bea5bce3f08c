import PlugboardAPI
import PlugboardHost
import PlugboardHTTPClient
import PlugboardJSON

/// `plugboard reload`: asks a running `plugboard serve` to reload its manifest
/// (`POST /v1/admin/reload`) and prints the outcome. Exit 0 applied or unchanged, 1
/// refused (or no server there), 2 usage.
enum ReloadCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let urlText = ctx.parsed.value("url") ?? "http://127.0.0.1:8080"
        guard let url = HTTPURL(urlText) else {
            throw UsageError.make("invalid --url \"\(urlText.prefix(200))\"",
                                  detail: "Expected http://HOST:PORT (plain HTTP, the address plugboard serve listens on).",
                                  hint: "Write --url http://127.0.0.1:8080.")
        }
        let token = ctx.processEnvironment["PLUGBOARD_ADMIN_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let response = try await ReloadClient.post(url, path: "/v1/admin/reload", token: token, timeoutSeconds: 600)
        guard let doc = try? JSONParser.parse(response.body, source: "the server's answer") else {
            throw PlugboardError(.reloadAnswerInvalid, "the server at \(url.text) answered \(response.status) without a JSON body",
                                 hint: "Check that --url points at plugboard serve.")
        }
        if response.status == 401 || doc["error"] != nil && doc["result"] == nil {
            let e = doc["error"]
            throw PlugboardError(PlugboardError.Code(e?["code"]?.text ?? "http.error"), e?["message"]?.text ?? "status \(response.status)",
                                 detail: e?["detail"]?.text,
                                 hint: e?["hint"]?.text ?? (response.status == 401 ? "Set PLUGBOARD_ADMIN_TOKEN to the server's admin token." : nil))
        }
        let result = doc["result"]?.text ?? "refused"
        if ctx.json {
            ctx.out(String(decoding: response.body, as: UTF8.self))
        } else {
            var generation: Int64 = 0
            if case .integer(let g)? = doc["generation"]?.kind { generation = g }
            var line = "reload \(result): generation \(generation)"
            if result == "applied" {
                let lists = ["added", "changed", "removed"].map { key -> String in
                    var names: [String] = []
                    if case .array(let a)? = doc[key]?.kind { names = a.compactMap(\.text) }
                    return "\(key) [\(names.joined(separator: ", "))]"
                }
                line += " (\(lists.joined(separator: ", ")))"
            }
            ctx.out(line + "\n")
            if let e = doc["error"], let code = e["code"]?.text {
                var text = "plugboard: error: \(code): \(e["message"]?.text ?? "")\n"
                if let d = e["detail"]?.text { text += "DETAIL: \(d)\n" }
                if let h = e["hint"]?.text { text += "HINT: \(h)\n" }
                ctx.err(text)
            }
        }
        return result == "applied" || result == "unchanged" ? 0 : 1
    }
}

/// `http://host:port`, as `--url` takes it.
struct HTTPURL {
    let host: String
    let port: UInt16
    let text: String

    init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        var rest = text.dropFirst(7)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]) else { return nil }
        var host = String(rest[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.text = text
    }
}

/// The one request `plugboard reload` sends, over the plain-HTTP client the plugins use
/// (PlugboardHTTPClient): its socket calls run on a Dispatch queue of their own, so the
/// wait for a reload, which may take minutes, holds no thread of Swift's cooperative pool.
enum ReloadClient {
    struct Response {
        let status: Int
        let body: [UInt8]
    }

    static func post(_ url: HTTPURL, path: String, token: String?, timeoutSeconds: Int) async throws(PlugboardError) -> Response {
        let client = PlainHTTPClient(timeoutSeconds: Double(timeoutSeconds), maxIdlePerHost: 0)
        defer { client.shutdown() }
        var headers = [("Connection", "close")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let request = PlainHTTPRequest(method: "POST", host: url.host, port: Int(url.port), hostHeader: "\(url.host):\(url.port)",
                                       target: path, headers: headers, sendsLength: true)
        do {
            let response = try await client.perform(request)
            return Response(status: response.status, body: response.body)
        } catch let error as PlainHTTPError {
            switch error {
            case .cannotConnect(let why), .invalidRequest(let why):
                throw unreachable(url, why)
            case .timedOut, .connectionLost, .badResponse, .tooLarge, .cancelled:
                throw PlugboardError(.reloadAnswerInvalid, "the server at \(url.text) sent no HTTP answer",
                                     detail: "The HTTP client reported: \(error).",
                                     hint: "Check that --url points at plugboard serve.")
            }
        } catch {
            throw PlugboardError(.reloadAnswerInvalid, "the server at \(url.text) sent no HTTP answer", detail: "\(error)",
                                 hint: "Check that --url points at plugboard serve.")
        }
    }

    private static func unreachable(_ url: HTTPURL, _ why: String) -> PlugboardError {
        PlugboardError(.reloadUnreachable, "could not reach plugboard serve at \(url.text): \(why)",
                       hint: "Start plugboard serve, or pass the address it listens on with --url.")
    }
}

extension JSONValue {
    var text: String? {
        if case .string(let s) = kind { return s }
        return nil
    }
}
