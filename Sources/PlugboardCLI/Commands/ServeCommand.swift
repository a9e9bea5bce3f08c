#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardJSON
import PlugboardS3Server
import PlugboardServer

/// `plugboard serve`: the HTTP API over the bound ObjectStorage until SIGTERM or SIGINT.
enum ServeCommand {
    /// `--shutdown-timeout`'s default.
    static let defaultShutdownTimeoutSeconds = 10.0
    /// `--handler-start`'s values (the switch in ``options(_:)`` takes each).
    static let handlerStarts = ["at-once", "immediate", "pool"]

    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        if ctx.parsed.value("fleet") != nil { return try await runFleet(ctx) }
        // Read once, here: --s3-listen takes the manifest's key pairs from it (at start; a
        // reload does not change them). A manifest error waits until a flag error had its turn.
        let loaded = Result { () throws(PlugboardError) -> Manifest in try Manifest.load(path: ctx.hostConfiguration.manifestPath) }
        let options = try options(ctx, manifest: loaded)
        // sd_notify's unset_environment, before any plugin loads: whatever a plugin spawns
        // must not speak for this process to systemd. (The preflight children get the
        // captured environment without it: PreflightRunner.)
        unsetenv("NOTIFY_SOCKET")
        try ServeLifecycle.checkExposure(options, logger: ctx.logger)
        if ctx.parsed.flag("watch") && ctx.parsed.flag("no-watch") {
            throw UsageError.make("--watch and --no-watch contradict each other", hint: "Give one of them, or neither to follow the manifest's hotSwap.enabled.")
        }
        var configuration = ctx.hostConfiguration
        configuration.watchOverride = ctx.parsed.flag("watch") ? true : ctx.parsed.flag("no-watch") ? false : nil
        // Refuse --watch in production before anything loads (exit 2).
        let manifest = try loaded.get()
        _ = try PluginHost.hotSwapMode(manifest.hotSwap, environment: configuration.environment ?? manifest.defaultEnvironment ?? .development,
                                       watchOverride: configuration.watchOverride, manifestPath: manifest.path)
        let host = try await PluginHost.start(configuration)
        let json = ctx.json
        return try await ServeLifecycle.run(host: host, options: options, logger: ctx.logger) { url, frontEnds in
            announce(url, frontEnds, json: json)
        }
    }

    /// The first line either way, so that a script can wait for it: with --json one
    /// object, the S3 endpoint's URL in it; as text, one more line per front end.
    static func announce(_ url: String, _ frontEnds: [(name: String, url: String)], json: Bool) {
        if json {
            Output.write(JSONOutput.object([("listening", .string(url))] + frontEnds.map { ("\($0.name.lowercased())Listening", .string($0.url)) })
                             .render(pretty: false) + "\n", to: 1)
        } else {
            Output.write("plugboard serve: listening on \(url)\n" + frontEnds.map { "plugboard serve: \($0.name) API listening on \($0.url)\n" }.joined(),
                         to: 1)
        }
    }

    static func options(_ ctx: CommandContext, manifest: Result<Manifest, PlugboardError>) throws(PlugboardError) -> ServeLifecycle.Options {
        let listenText = ctx.parsed.value("listen") ?? ListenAddress.defaultText
        guard let listen = ListenAddress(listenText) else {
            throw UsageError.make("invalid --listen \"\(listenText)\"",
                                  detail: "Expected HOST:PORT with a numeric IPv4 address, [IPv6] or localhost, and a port from 0 to 65535.",
                                  hint: "Write --listen 127.0.0.1:8080, or port 0 for a free one.")
        }
        var server = ServerConfiguration()
        server.limits.maxBodyBytes = try integer(ctx, "max-body-bytes", default: server.limits.maxBodyBytes, range: 0...(1 << 40))
        server.maxConnections = try integer(ctx, "max-connections", default: server.maxConnections, range: 1...1 << 20)
        server.maxConnectionsPerClient = try integer(ctx, "max-connections-per-client", default: server.maxConnectionsPerClient,
                                                     range: 1...1 << 20)
        server.eventLoops = try integer(ctx, "event-loops", default: server.eventLoops, range: 1...256)
        server.maxBufferedBytes = try integer(ctx, "max-buffered-bytes", default: server.maxBufferedBytes, range: (1 << 20)...(1 << 40))
        server.firstByteTimeoutSeconds = try seconds(ctx, "first-byte-timeout", default: server.firstByteTimeoutSeconds)
        server.idleTimeoutSeconds = try seconds(ctx, "idle-timeout", default: server.idleTimeoutSeconds)
        switch ctx.parsed.value("handler-start") {
        case nil, "at-once": (server.answersWithoutWaiting, server.immediateHandlers) = (true, true)
        case "immediate": (server.answersWithoutWaiting, server.immediateHandlers) = (false, true)
        case "pool": (server.answersWithoutWaiting, server.immediateHandlers) = (false, false)
        case let other?:
            throw UsageError.make("invalid --handler-start \"\(other)\"", detail: "Expected at-once, immediate or pool.",
                                  hint: "Leave it out for at-once (docs/BENCHMARKS.md compares the three).")
        }
        server.headerTimeoutSeconds = try seconds(ctx, "request-timeout", default: server.headerTimeoutSeconds)
        server.bodyTimeoutSeconds = server.headerTimeoutSeconds
        func token(_ name: String) -> String? { ctx.processEnvironment[name].flatMap { $0.isEmpty ? nil : $0 } }
        for name in ["PLUGBOARD_API_TOKEN", "PLUGBOARD_ADMIN_TOKEN"] {
            if let value = token(name) { try checkCredential(value, name: name, what: "a token") }
        }
        var options = ServeLifecycle.Options(listen: listen, server: server,
                                             shutdownTimeoutSeconds: try seconds(ctx, "shutdown-timeout", default: defaultShutdownTimeoutSeconds),
                                             apiToken: token("PLUGBOARD_API_TOKEN"), adminToken: token("PLUGBOARD_ADMIN_TOKEN"),
                                             notifySocket: token("NOTIFY_SOCKET"))
        if let frontEnd = try s3FrontEnd(ctx, listen: listen, token: token, manifest: manifest) { options.frontEnds.append(frontEnd) }
        return options
    }

    /// `--s3-listen`: the S3 endpoint, with the key pairs of the manifest's `s3` object and
    /// the environment's PLUGBOARD_S3_ACCESS_KEY_ID / PLUGBOARD_S3_SECRET_ACCESS_KEY (which
    /// wins over a manifest pair with the same ID). The flags and the pairs are read here;
    /// `S3Router.Configuration.validate()` holds every rule they must keep.
    static func s3FrontEnd(_ ctx: CommandContext, listen: ListenAddress, token: (String) -> String?,
                           manifest: Result<Manifest, PlugboardError>) throws(PlugboardError) -> ServeLifecycle.FrontEnd? {
        let region = ctx.parsed.value("s3-region")
        let domain = ctx.parsed.value("s3-domain")
        guard let text = ctx.parsed.value("s3-listen") else {
            if region != nil || domain != nil {
                throw UsageError.make("--\(region != nil ? "s3-region" : "s3-domain") without --s3-listen",
                                      hint: "Add --s3-listen HOST:PORT to serve the S3 API.")
            }
            return nil
        }
        guard let address = ListenAddress(text) else {
            throw UsageError.make("invalid --s3-listen \"\(text)\"",
                                  detail: "Expected HOST:PORT with a numeric IPv4 address, [IPv6] or localhost, and a port from 0 to 65535.",
                                  hint: "Write --s3-listen 127.0.0.1:9000, or port 0 for a free one.")
        }
        if address == listen && address.port != 0 {
            throw UsageError.make("--s3-listen \(text) is the address --listen already uses", hint: "Give the S3 API a port of its own, such as 9000.")
        }
        var configuration = S3Router.Configuration(credentials: [], region: region ?? "us-east-1", domain: domain)
        // The flags before the manifest is looked at: a flag error always has its turn first.
        try configuration.validateAddressing()
        let manifest = try manifest.get()
        configuration.credentials = try manifest.s3?.resolvedCredentials(environment: ctx.processEnvironment) ?? []
        configuration.signatureV2 = manifest.s3?.signatureV2 ?? false
        let idVariable = "PLUGBOARD_S3_ACCESS_KEY_ID", secretVariable = "PLUGBOARD_S3_SECRET_ACCESS_KEY"
        let id = token(idVariable), secret = token(secretVariable)
        if let id, let secret {
            configuration.credentials.append(S3Credential(accessKeyID: id, secretAccessKey: secret,
                                                          origin: .environment(accessKeyIDVariable: idVariable, secretVariable: secretVariable)))
        }
        configuration.sources = .init(listen: text, manifestPath: manifest.path,
                                      unsetVariables: [id == nil ? idVariable : nil, secret == nil ? secretVariable : nil].compactMap { $0 })
        try configuration.validate()
        return ServeLifecycle.FrontEnd(name: "S3", listen: address) { [configuration] host, logger in
            let router = S3Router(provider: host, configuration: configuration, logger: logger)
            let metrics = router.metrics
            return (router, { metrics.render() })
        }
    }

    /// Refuses (`serve.weak_credential`, exit 2) a token that breaks ``CredentialRule``.
    static func checkCredential(_ value: String, name: String, what: String) throws(PlugboardError) {
        if let refusal = CredentialRule.refusal(value, variable: name, what: what) { throw refusal }
    }

    private static func integer(_ ctx: CommandContext, _ name: String, default value: Int,
                                range: ClosedRange<Int>) throws(PlugboardError) -> Int {
        guard let text = ctx.parsed.value(name) else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError.make("invalid --\(name) \"\(text)\"", detail: "Expected a whole number from \(range.lowerBound) to \(range.upperBound).")
        }
        return n
    }

    private static func seconds(_ ctx: CommandContext, _ name: String, default value: Double) throws(PlugboardError) -> Double {
        guard let text = ctx.parsed.value(name) else { return value }
        guard let n = Double(text), n.isFinite, n > 0, n <= 86_400 else {
            throw UsageError.make("invalid --\(name) \"\(text)\"", detail: "Expected a number of seconds above 0, at most 86400.")
        }
        return n
    }
}
