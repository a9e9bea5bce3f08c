#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardConcurrency
import Synchronization

/// `plugboard serve` from start to exit: run the services, wait for SIGTERM or SIGINT,
/// then shut down in order: stop accepting, let in-flight requests finish (bounded), stop
/// the host's managed services, return 0. That is swift-service-lifecycle's shutdown
/// order, but one sequential function, not its shape (no `Service` protocol or service
/// group): serve runs one server and one host, so there is nothing to group.
public enum ServeLifecycle {
    public struct Options: Sendable {
        public var listen: ListenAddress
        public var server: ServerConfiguration
        /// How long in-flight requests may take to finish once a stop is asked for.
        public var shutdownTimeoutSeconds: Double
        /// `PLUGBOARD_API_TOKEN`, `PLUGBOARD_ADMIN_TOKEN`; nil when unset or empty.
        public var apiToken: String?
        public var adminToken: String?
        /// `NOTIFY_SOCKET`, set when systemd runs the server; nil otherwise.
        public var notifySocket: String?
        /// Further APIs on addresses of their own, on the same event loops (the S3 endpoint).
        public var frontEnds: [FrontEnd] = []
        /// The counters the server records into; given by a caller that reads them too
        /// (a fleet host reports its error rate from them).
        public var metrics = ServerMetrics()

        public init(listen: ListenAddress, server: ServerConfiguration, shutdownTimeoutSeconds: Double,
                    apiToken: String?, adminToken: String?, notifySocket: String? = nil) {
            self.listen = listen
            self.server = server
            self.shutdownTimeoutSeconds = shutdownTimeoutSeconds
            self.apiToken = apiToken
            self.adminToken = adminToken
            self.notifySocket = notifySocket
        }
    }

    /// Another API served beside the native one, over the same host: the handler is made
    /// once the host runs, and its counters join `/metrics`.
    public struct FrontEnd: Sendable {
        /// How the startup line names it (`S3`).
        public var name: String
        public var listen: ListenAddress
        public var makeHandler: @Sendable (PluginHost, Logger) -> (handler: any HTTPHandler, metrics: @Sendable () -> String)

        public init(name: String, listen: ListenAddress,
                    makeHandler: @escaping @Sendable (PluginHost, Logger) -> (handler: any HTTPHandler, metrics: @Sendable () -> String)) {
            self.name = name
            self.listen = listen
            self.makeHandler = makeHandler
        }
    }

    /// Refuses, before anything starts, to open the admin API to the network without a
    /// token.
    public static func checkExposure(_ options: Options, logger: Logger) throws(PlugboardError) {
        if options.apiToken == nil, let frontEnd = options.frontEnds.first {
            // The front end checks every request, but the native API beside it reads and
            // writes the same storage, the front end's own records included.
            logger.warning("\(frontEnd.name) requests are checked against their key pairs, but without PLUGBOARD_API_TOKEN the native API on \(options.listen.host):\(options.listen.port) reads and writes the same storage unchecked, \(frontEnd.name)'s buckets, objects and upload parts included (docs/S3_API.md); set PLUGBOARD_API_TOKEN to guard it")
        }
        guard !options.listen.isLoopback else { return }
        guard options.adminToken != nil else {
            throw PlugboardError(.serveUnprotected, "refusing to serve on \(options.listen.host):\(options.listen.port) without PLUGBOARD_ADMIN_TOKEN",
                detail: "\(options.listen.host) is not a loopback address, so other machines could reach /v1/admin/*.",
                hint: "Set PLUGBOARD_ADMIN_TOKEN (and PLUGBOARD_API_TOKEN) in the environment, or listen on 127.0.0.1.")
        }
        if options.apiToken == nil {
            logger.warning("serving objects on a non-loopback address without PLUGBOARD_API_TOKEN: anyone who can reach \(options.listen.host):\(options.listen.port) may read and write objects")
        }
    }

    /// Serves `host` until a signal; returns the exit status. `announce` receives the URL
    /// listened on once the socket is bound, and each front end's name and URL (the CLI
    /// prints them as text or JSON).
    public static func run(host: PluginHost, options: Options, logger: Logger,
                           announce: @Sendable (String, [(name: String, url: String)]) -> Void) async throws(PlugboardError) -> Int32 {
        let mode = host.hotSwapMode
        // The one rule for `required` (PluginHost.requiredFailure): without hot swap a
        // failed required plugin stops serve at start; with it, serve runs not-ready until
        // a reload fixes it.
        if let failure = host.requiredFailure {
            guard mode.enabled else {
                await host.shutdown()
                throw failure
            }
            for record in host.requiredFailures {
                logger.error("required plugin \"\(record.name)\" is \(record.state); /readyz and object routes answer 503 until a reload fixes it",
                             metadata: ["error": .string(record.error.map { "\($0.code): \($0.message)" } ?? "-")])
            }
        }
        // A reader that went away (`plugboard serve | head -1`, a closed log pipe) must
        // not kill the server; failed writes are reported by their return value instead.
        signal(SIGPIPE, SIG_IGN)
        var configuration = options.server
        configuration.host = options.listen.host
        configuration.port = options.listen.port
        let metrics = options.metrics
        let connections = OpenConnections()
        let frontEnds = options.frontEnds.map { frontEnd in
            (frontEnd, frontEnd.makeHandler(host, logger.with("component", .string(frontEnd.name.lowercased()))))
        }
        let frontEndMetrics = frontEnds.map { $0.1.metrics }
        let router = APIRouter(host: host, apiToken: options.apiToken, adminToken: options.adminToken, metrics: metrics,
                               logger: logger.with("component", "http"), openConnections: { connections.count },
                               moreMetrics: { frontEndMetrics.map { $0() }.joined() })
        let server = HTTPServer(configuration: configuration, handler: router, logger: logger,
                                additionalEndpoints: frontEnds.map {
                                    HTTPServer.Endpoint(host: $0.0.listen.host, port: $0.0.listen.port, handler: $0.1.handler)
                                })
        connections.server.withLock { $0 = server }
        StopSignals.install(descriptor: server.stopDescriptor)
        let port: Int
        do throws(PlugboardError) {
            port = try server.start()
        } catch {
            StopSignals.uninstall()
            await host.shutdown()
            throw error
        }
        let notifier = SystemdNotifier(socket: options.notifySocket, logger: logger)
        let url = options.listen.url(port: port)
        if let notifier {
            host.onReloadStart { trigger in notifier.reloading(status: "reloading (\(trigger))") }
            host.onReload { outcome in notifier.ready(status: "listening on \(url); reload \(outcome.result.rawValue)") }
        }
        let triggers = ReloadTriggers.start(host: host, mode: mode, logger: logger, notifier: notifier)
        let frontEndURLs = zip(frontEnds, server.additionalPorts).map { (name: $0.0.0.name, url: $0.0.0.listen.url(port: $0.1)) }
        announce(url, frontEndURLs)
        for frontEnd in frontEndURLs {
            logger.notice("\(frontEnd.name) endpoint listening", metadata: ["address": .string(frontEnd.url)])
        }
        logger.notice("listening", metadata: ["address": .string(url),
                                              "hotSwap": .string(mode.enabled ? (mode.watching ? "on, watching" : "on, not watching") : "off")])
        notifier?.ready(status: "listening on \(url)")
        let open = await server.stopped(drainTimeoutSeconds: options.shutdownTimeoutSeconds) { notifier?.stopping() }
        StopSignals.uninstall()
        triggers.stop()
        if open > 0 {
            logger.warning("shutdown timeout: \(open) connection(s) still busy after \(options.shutdownTimeoutSeconds) s; exiting without them")
        }
        logger.notice("stopped accepting; stopping managed services")
        await host.shutdown()
        return 0
    }
}

/// The server's open-connection count for `/metrics` (the router is made first).
final class OpenConnections: Sendable {
    let server = LockedValueBox<HTTPServer?>(nil)
    var count: Int { server.withLock { $0?.openConnections ?? 0 } }
}

/// SIGTERM and SIGINT write one byte to the server's stop descriptor, which is all a
/// signal handler may safely do.
enum StopSignals {
    static let descriptor = Atomic<Int32>(-1)

    static func install(descriptor fd: Int32) {
        descriptor.store(fd, ordering: .sequentiallyConsistent)
        for sig in [SIGTERM, SIGINT] {
            signal(sig) { _ in
                let fd = StopSignals.descriptor.load(ordering: .sequentiallyConsistent)
                var byte: UInt8 = 1
                if fd >= 0 { _ = write(fd, &byte, 1) }
            }
        }
    }

    static func uninstall() {
        for sig in [SIGTERM, SIGINT] { signal(sig, SIG_DFL) }
        descriptor.store(-1, ordering: .sequentiallyConsistent)
    }
}
