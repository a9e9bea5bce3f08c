#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
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
        return try await ServeLifecycle.run(host: host, options: options, logger: ctx.logger) { url in
            // One line either way, so that a script can wait for it: with --json an object.
            Output.write(json ? JSONOutput.object([("listening", .string(url))]).render(pretty: false) + "\n"
                              : "plugboard serve: listening on \(url)\n", to: 1)
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
        return ServeLifecycle.Options(listen: listen, server: server,
                                      shutdownTimeoutSeconds: try seconds(ctx, "shutdown-timeout", default: defaultShutdownTimeoutSeconds),
                                      apiToken: token("PLUGBOARD_API_TOKEN"), adminToken: token("PLUGBOARD_ADMIN_TOKEN"),
                                      notifySocket: token("NOTIFY_SOCKET"))
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
