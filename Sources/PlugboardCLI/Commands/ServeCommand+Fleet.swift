#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardFleet
import PlugboardHost
import PlugboardServer

extension ServeCommand {
    /// `serve --fleet URL`: the manifest comes from the fleet (docs/FLEET.md). The agent
    /// writes the desired manifest into the host's state folder, the host starts from it
    /// if it passes the reload's checks (else from the local copy, else from nothing),
    /// and each later desired manifest is a reload through the host's own path.
    static func runFleet(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        if ctx.parsed.value("manifest") != nil {
            throw UsageError.make("--fleet and --manifest exclude each other",
                                  hint: "A fleet host reads its manifest from the fleet: leave out --manifest, or --fleet to serve a file.")
        }
        if let flag = ["watch", "no-watch"].first(where: { ctx.parsed.flag($0) }) {
            throw UsageError.make("--fleet and --\(flag) exclude each other",
                                  hint: "A fleet host reloads when the fleet's manifest changes and watches no file: leave out --\(flag).")
        }
        let (store, keys) = try FleetCommand.connect(ctx)
        let listenText = ctx.parsed.value("listen") ?? ListenAddress.defaultText
        let hostID = try fleetHostID(ctx, listen: listenText)
        let folder: String
        if let given = ctx.parsed.value("fleet-state") {
            folder = given
        } else if let cache = ctx.cacheDirectory {
            folder = "\(cache)/fleet/\(hostID)"
        } else {
            folder = "\(try PluginHost.defaultCacheDirectory(environment: ctx.processEnvironment))/fleet/\(hostID)"
        }
        let logger = ctx.logger
        let agent = FleetAgent(store: store, configuration: .init(keys: keys, hostID: hostID, localCopy: FleetLocalCopy(folder: folder),
                                                                 version: PlugboardCLI.version, logger: logger))
        var plan = try await agent.prepare()
        var configuration = ctx.hostConfiguration
        configuration.manifestPath = FleetLocalCopy(folder: folder).manifestPath
        configuration.fleetManaged = true
        // Through the reload's checks, as every later manifest: a restarted host must not
        // map what the running ones refused.
        var host: PluginHost
        while true {
            switch try await PluginHost.startChecked(configuration) {
            case .started(let started):
                host = started
            case .refused(let error):
                guard let next = try await agent.fallback(after: error) else { throw error }
                plan = next
                continue
            }
            break
        }
        try await agent.started(requiredFailure: host.requiredFailure)
        logger.notice("fleet: host \"\(hostID)\" started from \(plan.startedFrom)",
                      metadata: ["manifest": .string(plan.digest.isEmpty ? "(none)" : plan.digest), "state": .string(folder)])
        let loaded = Result { () throws(PlugboardError) -> Manifest in host.manifest }
        let options = try options(ctx, manifest: loaded)
        unsetenv("NOTIFY_SOCKET")
        try ServeLifecycle.checkExposure(options, logger: logger)
        let metrics = options.metrics
        let running = LockedValueBox<Task<Void, Never>?>(nil)
        let json = ctx.json
        let status = try await ServeLifecycle.run(host: host, options: options, logger: logger) { [host] url, frontEnds in
            announce(url, frontEnds, json: json)
            running.withLock { $0 = Task { await agent.run(host: host, address: url, totals: {
                // A crash of an isolated plugin's worker counts as an error: a build that
                // crashes under the canary's traffic is rolled back even when every read
                // was retried on the spare.
                let totals = metrics.objectTotals()
                return (totals.requests, totals.errors + host.isolatedCrashes)
            }) } }
        }
        if let task = running.withLock({ $0 }) {
            task.cancel()
            await task.value
        }
        await agent.leave()
        return status
    }

    /// `--host-id`, else HOSTNAME:PORT of `--listen`.
    static func fleetHostID(_ ctx: CommandContext, listen: String) throws(PlugboardError) -> String {
        let id: String
        if let given = ctx.parsed.value("host-id") {
            id = given
        } else {
            guard let address = ListenAddress(listen), address.port != 0 else {
                throw UsageError.make("--fleet with --listen port 0 needs --host-id",
                                      hint: "The default host id is HOSTNAME:PORT of --listen; give --host-id ID, or a port.")
            }
            id = "\(FleetCommand.hostname()):\(address.port)"
        }
        let allowed = id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x3A) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }
        guard !id.isEmpty, id.utf8.count <= 128, allowed, id != ".", id != ".." else {
            throw UsageError.make("invalid host id \"\(id.prefix(128))\"",
                                  detail: "A host id is 1 to 128 letters, digits, dots, dashes, underscores and colons.",
                                  hint: "Give --host-id web-1, for example.")
        }
        return id
    }
}
