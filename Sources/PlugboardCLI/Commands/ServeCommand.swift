#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardS3Server
import PlugboardServer

/// `plugboard serve`: the HTTP API over the bound ObjectStorage until SIGTERM or SIGINT.
enum ServeCommand {
    /// `--shutdown-timeout`'s default.
    static let defaultShutdownTimeoutSeconds = 10.0
    /// `--handler-start`'s values (the switch in ``options(_:)`` takes each).
    static let handlerStarts = ["immediate", "pool"]

    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let options = try options(ctx)
        // sd_notify's unset_environment, before any plugin loads: the preflight children,
        // and whatever a plugin spawns, must not speak for this process to systemd.
        unsetenv("NOTIFY_SOCKET")
        try ServeLifecycle.checkExposure(options, logger: ctx.logger)
        if ctx.parsed.flag("watch") && ctx.parsed.flag("no-watch") {
            throw UsageError.make("--watch and --no-watch contradict each other", hint: "Give one of them, or neither to follow the manifest's hotSwap.enabled.")
        }
        var configuration = ctx.hostConfiguration
        configuration.watchOverride = ctx.parsed.flag("watch") ? true : ctx.parsed.flag("no-watch") ? false : nil
        // Refuse --watch in production before anything loads (exit 2).
        let manifest = try Manifest.load(path: configuration.manifestPath)
        _ = try PluginHost.hotSwapMode(manifest.hotSwap, environment: configuration.environment ?? manifest.defaultEnvironment ?? .development,
                                       watchOverride: configuration.watchOverride)
        let host = try await PluginHost.start(configuration)
        let json = ctx.json
        return try await ServeLifecycle.run(host: host, options: options, logger: ctx.logger) { url, frontEnds in
            // The first line either way, so that a script can wait for it: with --json one
            // object, the S3 endpoint's URL in it; as text, one more line per front end.
            if json {
                Output.write(JSONOutput.object([("listening", .string(url))] + frontEnds.map { ("\($0.name.lowercased())Listening", .string($0.url)) })
                                 .render(pretty: false) + "\n", to: 1)
            } else {
                Output.write("plugboard serve: listening on \(url)\n" + frontEnds.map { "plugboard serve: \($0.name) API listening on \($0.url)\n" }.joined(),
                             to: 1)
            }
        }
    }

    static func options(_ ctx: CommandContext) throws(PlugboardError) -> ServeLifecycle.Options {
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
        case nil, "immediate": server.immediateHandlers = true
        case "pool": server.immediateHandlers = false
        case let other?:
            throw UsageError.make("invalid --handler-start \"\(other)\"", detail: "Expected immediate or pool.",
                                  hint: "Leave it out for immediate (docs/BENCHMARKS.md compares the two).")
        }
        server.headerTimeoutSeconds = try seconds(ctx, "request-timeout", default: server.headerTimeoutSeconds)
        server.bodyTimeoutSeconds = server.headerTimeoutSeconds
        func token(_ name: String) -> String? { ctx.processEnvironment[name].flatMap { $0.isEmpty ? nil : $0 } }
        var options = ServeLifecycle.Options(listen: listen, server: server,
                                             shutdownTimeoutSeconds: try seconds(ctx, "shutdown-timeout", default: defaultShutdownTimeoutSeconds),
                                             apiToken: token("PLUGBOARD_API_TOKEN"), adminToken: token("PLUGBOARD_ADMIN_TOKEN"),
                                             notifySocket: token("NOTIFY_SOCKET"))
        if let frontEnd = try s3FrontEnd(ctx, listen: listen, token: token) { options.frontEnds.append(frontEnd) }
        return options
    }

    /// `--s3-listen`: the S3 endpoint, with its key pair from the environment. There is no
    /// anonymous mode, on loopback either: S3 clients always sign, and a signature the
    /// server has no secret to check protects nothing.
    static func s3FrontEnd(_ ctx: CommandContext, listen: ListenAddress,
                           token: (String) -> String?) throws(PlugboardError) -> ServeLifecycle.FrontEnd? {
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
        let id = token("PLUGBOARD_S3_ACCESS_KEY_ID"), secret = token("PLUGBOARD_S3_SECRET_ACCESS_KEY")
        guard let id, let secret else {
            let missing = [id == nil ? "PLUGBOARD_S3_ACCESS_KEY_ID" : nil, secret == nil ? "PLUGBOARD_S3_SECRET_ACCESS_KEY" : nil].compactMap { $0 }
            throw PlugboardError(.serveUnprotected, "refusing to serve the S3 API without credentials",
                detail: "--s3-listen \(text) was given, and \(missing.joined(separator: " and ")) \(missing.count == 1 ? "is" : "are") not set: every S3 request is checked against that key pair (SigV4).",
                hint: "Set PLUGBOARD_S3_ACCESS_KEY_ID and PLUGBOARD_S3_SECRET_ACCESS_KEY, and give the S3 client the same pair (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).")
        }
        if let region, region.isEmpty || region.count > 64 || !region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
            throw UsageError.make("invalid --s3-region \"\(region.prefix(80))\"", detail: "Expected a region name of letters, digits and '-', such as us-east-1.")
        }
        if let domain, domain.isEmpty || domain.hasPrefix(".") || domain.contains("/") || domain.contains(":") {
            throw UsageError.make("invalid --s3-domain \"\(domain.prefix(80))\"", detail: "Expected a host name such as s3.example.test, without a port.",
                                  hint: "Clients then address bucket b as b.s3.example.test.")
        }
        let s3Options = S3Router.Options(credentials: [S3Credential(accessKeyID: id, secretAccessKey: secret)],
                                         region: region ?? "us-east-1", domain: domain?.lowercased())
        return ServeLifecycle.FrontEnd(name: "S3", listen: address) { host, logger in
            let router = S3Router(provider: host, options: s3Options, logger: logger)
            let metrics = router.metrics
            return (router, { metrics.render() })
        }
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
