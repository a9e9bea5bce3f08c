#if canImport(Glibc)
import Glibc
#endif
import PlugboardHost
import PlugboardJSON
import Testing

/// Start-up, authentication, admin reports, metrics and graceful stop.
@Suite struct LifecycleTests {
    @Test func startLine_isExactlyOneLine() throws {
        let server = try ServerProcess()
        #expect(server.startLine == "plugboard serve: listening on http://127.0.0.1:\(server.port)")
        #expect(server.stop() == 0)
    }

    @Test func startLine_withJSON_isOneJSONObject() throws {
        let server = try ServerProcess(arguments: ["--json"])
        #expect(server.startLine == "{\"listening\":\"http://127.0.0.1:\(server.port)\"}")
        #expect(server.stop() == 0)
    }

    @Test func sigtermDuringARequest_finishesIt_thenExitsZero() throws {
        let server = try ServerProcess(plugins: [ServerProcess.memory(latencyMilliseconds: 3000)],
                                       arguments: ["--log-level", "debug"])
        let c = try server.client()
        try c.send("GET /v1/objects/slow HTTP/1.1\r\nHost: h\r\n\r\n")
        let idle = try server.client()
        #expect(try idle.request("GET", "/healthz").status == 200)
        // The signal must find the request inside the storage's 3 s, not still unread.
        try #require(server.waitForStderr(containing: "started GET /v1/objects/slow"), "\(server.stderr)")
        kill(server.pid, SIGTERM)
        let r = try c.response()
        #expect(r.status == 404)
        #expect(r.header("connection") == "close")
        #expect(idle.isClosedByServer())
        #expect(server.waitForExit(timeoutMilliseconds: 20_000) == 0)
        #expect(throws: FixtureError.self) { try server.client() }
    }

    @Test func shutdownTimeout_boundsTheWaitForSlowRequests() throws {
        let server = try ServerProcess(plugins: [ServerProcess.memory(latencyMilliseconds: 60_000)],
                                       arguments: ["--shutdown-timeout", "1", "--log-level", "debug"])
        let c = try server.client()
        try c.send("GET /v1/objects/slow HTTP/1.1\r\nHost: h\r\n\r\n")
        // The timeout bounds the wait for a request in progress: the request must be one.
        try #require(server.waitForStderr(containing: "started GET /v1/objects/slow"), "\(server.stderr)")
        let started = CommandRunner.monotonicMilliseconds()
        #expect(server.stop() == 0)
        // A liveness bound: well below the request's 60 s, loose for a loaded machine.
        #expect(CommandRunner.monotonicMilliseconds() - started < 40_000)
        #expect(server.stderr.contains("shutdown timeout"))
    }

    @Test func idleConnections_areClosedAfterTheIdleTimeout() throws {
        let server = try ServerProcess(arguments: ["--idle-timeout", "1"])
        let c = try server.client()
        #expect(try c.request("GET", "/healthz").status == 200)
        let started = CommandRunner.monotonicMilliseconds()
        #expect(c.isClosedByServer())
        let waited = CommandRunner.monotonicMilliseconds() - started
        // Closed after about the 1 s idle timeout, not the 60 s default; the upper bound is
        // loose for a loaded machine and below the client's own 15 s read timeout.
        #expect(waited >= 500 && waited < 14_000)
    }

    @Test func sigint_stopsAnIdleServer() throws {
        let server = try ServerProcess()
        #expect(server.stop(SIGINT) == 0)
    }

    @Test func adminEndpoints_needTheAdminToken_andMatchTheCLI() async throws {
        let server = try ServerProcess(environment: ["PLUGBOARD_ADMIN_TOKEN": "s3cret-admin"])
        let missing = try server.client().request("GET", "/v1/admin/plugins")
        #expect(missing.status == 401)
        #expect(missing.header("www-authenticate") == "Bearer")
        #expect(missing.errorCode == "http.unauthorized")
        let wrong = try server.client().request("GET", "/v1/admin/services", headers: [("Authorization", "Bearer s3cre")])
        #expect(wrong.status == 401)
        #expect(!server.stderr.contains("s3cret-admin"))
        let auth = [("Authorization", "Bearer s3cret-admin")]
        let plugins = try server.client().request("GET", "/v1/admin/plugins", headers: auth)
        #expect(plugins.status == 200)
        let services = try server.client().request("GET", "/v1/admin/services", headers: auth)
        #expect(services.status == 200)
        let cliPlugins = await server.sandbox.run(["plugins", "--json"])
        let cliServices = await server.sandbox.run(["services", "--json"])
        #expect(cliPlugins.status == 0 && cliServices.status == 0)
        // The plugins member is what the CLI prints; the rest is the running server's.
        let admin = try JSONValue.parse(plugins.text)
        #expect(admin.keys == ["generation", "hotSwap", "reload", "plugins", "retired", "mappedImages"])
        #expect(admin["plugins"]?.configValue == (try JSONValue.parse(cliPlugins.stdout)).configValue)
        #expect(services.text == cliServices.stdout)
        #expect(admin["plugins"]?.elements?.first?.keys == ["name", "state", "version", "path", "sha256", "services", "generation", "error", "signedBy", "isolation"])
        // Objects need no token unless PLUGBOARD_API_TOKEN is set.
        #expect(try server.client().request("GET", "/v1/objects").status == 200)
    }

    @Test func apiToken_guardsObjects_butNotHealthOrMetrics() throws {
        let server = try ServerProcess(environment: ["PLUGBOARD_API_TOKEN": "tok-tok-tok"])
        #expect(try server.client().request("GET", "/v1/objects/k").status == 401)
        #expect(try server.client().request("GET", "/v1/objects").status == 401)
        #expect(try server.client().request("GET", "/v1/objects/k", headers: [("Authorization", "Bearer tok-tok-tok")]).status == 404)
        #expect(try server.client().request("GET", "/v1/objects/k", headers: [("Authorization", "bearer tok-tok-tok")]).status == 404)
        #expect(try server.client().request("GET", "/v1/objects/k", headers: [("Authorization", "Basic tok-tok-tok")]).status == 401)
        for path in ["/healthz", "/readyz", "/metrics"] {
            #expect(try server.client().request("GET", path).status == 200, "\(path)")
        }
        // Refused before the body is read: the server does not take in 10 MB it will not
        // use, and closes the connection since the body is still coming.
        let early = try server.client()
        try early.send("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 10000000\r\nExpect: 100-continue\r\n\r\n")
        let refused = try early.response()
        #expect(refused.status == 401)
        #expect(refused.header("connection") == "close")
        #expect(early.isClosedByServer())
    }

    /// One rule for every credential (docs/SECURITY.md): a short token is refused at
    /// start, on loopback too, and the refusal never quotes it.
    @Test(arguments: [("PLUGBOARD_ADMIN_TOKEN", "x", "found 1 character"), ("PLUGBOARD_API_TOKEN", "seven77", "found 7 characters"),
                      ("PLUGBOARD_ADMIN_TOKEN", "has a space", "found a space at character 4")])
    func aWeakToken_isRefusedAtStart(_ name: String, _ value: String, _ found: String) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        for listen in ["0.0.0.0:0", "127.0.0.1:0"] {
            let result = await sandbox.run(["serve", "--listen", listen], environment: [name: value])
            expectRun(result, status: 2, stdout: .empty, stderr: .contains("refusing to serve with \(name)", found, "8 to 256 printable ASCII characters"))
            // (A one-letter value is in any text; the longer ones are not quoted.)
            #expect(value.count < 4 || !result.stderr.contains(value))
        }
        expectRun(await sandbox.run(["serve", "--listen", "127.0.0.1:0", "--json"], environment: [name: value]), status: 2,
                  stdout: .contains("serve.weak_credential"))
    }

    @Test func nonLoopbackWithoutAdminToken_isRefusedAtStart() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory]))
        expectRun(await sandbox.run(["serve", "--listen", "0.0.0.0:0"]), status: 2, stdout: .empty,
                  stderr: .contains("0.0.0.0", "PLUGBOARD_ADMIN_TOKEN"))
        expectRun(await sandbox.run(["serve", "--listen", "nowhere"]), status: 2, stdout: .empty,
                  stderr: .contains("invalid --listen \"nowhere\""))
    }

    @Test func metrics_countRequestsByRouteAndStatus_andShowPlugins() throws {
        let server = try ServerProcess()
        let c = try server.client()
        _ = try c.request("PUT", "/v1/objects/m", body: [1])
        _ = try c.request("GET", "/v1/objects/m")
        _ = try c.request("GET", "/v1/objects/missing")
        _ = try c.request("GET", "/nope")
        // A status outside the common ones the counters keep in their flat array.
        #expect(try c.request("DELETE", "/healthz").status == 405)
        let metrics = try c.request("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        for line in ["plugboard_http_requests_total{route=\"object\",method=\"PUT\",status=\"200\"} 1",
                     "plugboard_http_requests_total{route=\"object\",method=\"GET\",status=\"200\"} 1",
                     "plugboard_http_requests_total{route=\"object\",method=\"GET\",status=\"404\"} 1",
                     "plugboard_http_requests_total{route=\"unknown\",method=\"GET\",status=\"404\"} 1",
                     "plugboard_http_requests_total{route=\"healthz\",method=\"DELETE\",status=\"405\"} 1",
                     "plugboard_http_request_duration_seconds_count{route=\"object\"} 3",
                     "plugboard_plugin_state{plugin=\"Mem\",state=\"active\"} 1",
                     "plugboard_plugin_loads_total 1",
                     "plugboard_plugin_load_failures_total{state=\"failed\"} 0",
                     "plugboard_http_connections_open 1"] {
            #expect(metrics.text.split(separator: "\n").contains(Substring(line)), "\(line)")
        }
    }

    @Test func accessLog_namesEachRequest_withoutTokens() throws {
        let server = try ServerProcess(arguments: ["--log-level", "info"], environment: ["PLUGBOARD_API_TOKEN": "hush-hush-hush"])
        _ = try server.client().request("GET", "/v1/objects/k", headers: [("Authorization", "Bearer hush-hush-hush")])
        #expect(server.stop() == 0)
        let log = server.stderr
        #expect(log.contains("GET /v1/objects/k 404 "))
        #expect(!log.contains("hush-hush-hush"))
    }
}
