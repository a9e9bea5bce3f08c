#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardEtcd
import PlugboardFleet
import PlugboardHost
import PlugboardJSON

/// `plugboard fleet status|set|rollout`: the fleet on etcd (docs/FLEET.md).
enum FleetCommand {
    /// `--bake`, `--max-error-rate` and `--wave-timeout` defaults.
    static let defaultBakeSeconds = 10.0
    static let defaultMaxErrorRate = 0.01
    static let defaultWaveTimeoutSeconds = 120.0

    /// The store and key layout `--fleet` names.
    static func connect(_ ctx: CommandContext) throws(PlugboardError) -> (store: any FleetStore, keys: FleetKeys) {
        guard let text = ctx.parsed.value("fleet") else {
            throw UsageError.make("--fleet is required", hint: "Name the fleet: --fleet etcd://HOST:PORT[,HOST:PORT...]/PREFIX.")
        }
        let url = try EtcdClusterURL.parse(text)
        let client = EtcdClient(endpoints: url.endpoints, logger: ctx.logger.with("component", "etcd"))
        return (EtcdFleetStore(client: client), FleetKeys(prefix: url.prefix))
    }

    /// Who runs a command, for the records: USER@HOSTNAME.
    static func who(_ ctx: CommandContext) -> String {
        "\(ctx.processEnvironment["USER"] ?? ctx.processEnvironment["LOGNAME"] ?? "uid \(getuid())")@\(hostname())"
    }

    static func hostname() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func manifestBytes(_ ctx: CommandContext) throws(PlugboardError) -> (bytes: [UInt8], path: String) {
        guard let path = ctx.parsed.arguments.first else {
            throw UsageError.make("MANIFEST is required", hint: "Give the manifest file to store, such as plugins.json.")
        }
        return (try ManifestFile.read(path: path, maxBytes: 1 << 20), path)
    }

    /// The manifest's preflight here, before anything is written to the fleet: what a
    /// host's reload would refuse (`PluginHost.preflightAsReload`), with the plugins told
    /// they are only checked. `--no-preflight` leaves it to the hosts.
    ///
    /// - Throws: the manifest's own errors as they are (exit 2); any other refusal, and a
    ///   `${VAR}` this machine lacks (the hosts may have it), as `fleet.preflight_refused`,
    ///   naming the code a host would report.
    static func preflight(_ ctx: CommandContext, path: String, command: String) async throws(PlugboardError) {
        guard !ctx.parsed.flag("no-preflight") else { return }
        var configuration = ctx.hostConfiguration
        configuration.manifestPath = path
        configuration.checkOnly = true
        do throws(PlugboardError) {
            try await PluginHost.preflightAsReload(configuration)
        } catch where (error.code.area != "manifest" || error.code == .manifestMissingVariable)
                    && ![.cacheFailed, .cacheUntrusted, .cacheDirectoryUnset].contains(error.code) {
            throw PlugboardError(.fleetPreflightRefused, "\(command) refused: manifest \"\(path)\" did not pass its preflight here: \(error.code): \(error.message)",
                detail: (error.detail.map { "\($0) " } ?? "") + "A host's reload would refuse it the same way; nothing was written to the fleet.",
                hint: (error.hint.map { "\($0) " } ?? "") + "If only the hosts can run it (their products, variables or backends), give --no-preflight: each host still checks it.",
                underlying: error)
        }
    }

    // MARK: - status

    static func status(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let (store, keys) = try connect(ctx)
        let status = try await FleetStatus.read(from: store, keys: keys)
        if ctx.json {
            ctx.out(status.json)
            return 0
        }
        let unreadable = status.badRecords.contains { $0.key == "stable" }
        var text = "stable: " + (status.stable.map { "\($0.digest.prefix(12)) (set \($0.setAt) by \($0.by))" }
            ?? (unreadable ? "unreadable (bad record below; plugboard fleet set MANIFEST writes it again)" : "none (plugboard fleet set MANIFEST)")) + "\n"
        var table = Table(["HOST", "ADDRESS", "MANIFEST", "GEN", "READY", "LAST RELOAD", "ERRORS", "STATE"])
        for host in status.hosts {
            let s = host.status
            let rate = s.requests > 0 ? "\(s.errors)/\(s.requests)" : "0/0"
            var state = "ok"
            if host.refused, let r = s.lastReload {
                state = "refused \(r.digest.prefix(12)): \(r.errorCode ?? "?"): \(r.errorMessage ?? "")"
            } else if let orphaned = host.orphanedTarget {
                state = "lagging (on the target \(orphaned.digest.prefix(12)) of rollout \(orphaned.rollout), which no controller runs; stable is \(status.stable?.digest.prefix(12) ?? "none"))"
            } else if host.lagging {
                state = "lagging (wants \(host.desired?.prefix(12) ?? "?"))"
            }
            table.add([s.id, s.address, s.manifestDigest.isEmpty ? "(none)" : String(s.manifestDigest.prefix(12)), String(s.generation),
                       s.ready ? "yes" : "no", s.lastReload?.outcome ?? "-", rate, state])
        }
        text += status.hosts.isEmpty ? "no live hosts\n" : table.render()
        for id in status.gone { text += "gone: \(id) (it has a rollout's target but no live key)\n" }
        if let r = status.rollout {
            text += "rollout \(r.id): \(r.state)\(status.rolloutOrphaned ? " (orphaned)" : ""), \(r.candidate.prefix(12)) from \(r.previous.prefix(12)), started \(r.startedAt) by \(r.by)"
            text += r.endedAt.map { ", ended \($0)" } ?? ""
            text += "\n"
            if status.rolloutOrphaned {
                text += "  orphaned: no controller holds its lock (it died, and the lock's lease lapsed); its hosts keep its targets until plugboard fleet rollout --abort ends it\n"
            }
            for (i, wave) in r.waves.enumerated() { text += "  wave \(i + 1): \(wave.state): \(wave.hosts.joined(separator: ", "))\n" }
            if let reason = r.reason { text += "  reason: \(reason)\n" }
            if !r.stragglers.isEmpty { text += "  not back on \(r.previous.prefix(12)): \(r.stragglers.joined(separator: ", "))\n" }
        }
        for bad in status.badRecords { text += "bad record: \(bad.key): \(bad.error.code): \(bad.error.message)\n" }
        ctx.out(text)
        return 0
    }

    // MARK: - set

    static func set(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let (bytes, path) = try manifestBytes(ctx)
        let (store, keys) = try connect(ctx)
        try await preflight(ctx, path: path, command: "fleet set")
        let record = try await FleetManifests.setStable(bytes, source: path, by: who(ctx), in: store, keys: keys)
        if ctx.json {
            ctx.out(JSONOutput.object([("stable", record.json)]))
        } else {
            ctx.out("stable manifest: \(record.digest)\n")
        }
        return 0
    }

    // MARK: - rollout

    static func rollout(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        if ctx.parsed.flag("abort") {
            if ctx.parsed.flag("no-preflight") {
                throw UsageError.make("--abort does not take --no-preflight", hint: "Write plugboard fleet rollout --abort --fleet URL.")
            }
            if let extra = ["waves", "bake", "max-error-rate", "wave-timeout"].first(where: { ctx.parsed.value($0) != nil }) {
                throw UsageError.make("--abort does not take --\(extra)", hint: "Write plugboard fleet rollout --abort --fleet URL.")
            }
            guard ctx.parsed.arguments.isEmpty else {
                throw UsageError.make("--abort takes no MANIFEST", hint: "Write plugboard fleet rollout --abort --fleet URL.")
            }
            let (store, keys) = try connect(ctx)
            let record = try await RolloutController.abort(store: store, keys: keys, by: who(ctx), timeoutSeconds: 300,
                                                           clock: { MonotonicClock.now() })
            return finished(ctx, record, exitOnRollBack: 0)
        }
        let waves = try WavePlan(ctx.parsed.value("waves") ?? WavePlan.defaultText)
        let bake = try number(ctx, "bake", default: defaultBakeSeconds, range: 0...86_400)
        let maxErrorRate = try number(ctx, "max-error-rate", default: defaultMaxErrorRate, range: 0...1)
        let waveTimeout = try number(ctx, "wave-timeout", default: defaultWaveTimeoutSeconds, range: 0.001...86_400)
        let (bytes, path) = try manifestBytes(ctx)
        let (store, keys) = try connect(ctx)
        try await preflight(ctx, path: path, command: "fleet rollout")
        let settings = RolloutStateMachine.Settings(bakeSeconds: bake, maxErrorRate: maxErrorRate, waveTimeoutSeconds: waveTimeout,
                                                    rollbackTimeoutSeconds: waveTimeout)
        let controller = RolloutController(store: store, configuration: .init(keys: keys, waves: waves, settings: settings, by: who(ctx),
                                                                              logger: ctx.logger.with("component", "rollout")))
        let json = ctx.json
        guard let record = try await controller.run(manifest: bytes, source: path, progress: { line in
            // With --json, standard output holds the final report alone.
            Output.write("plugboard fleet rollout: \(line)\n", to: json ? 2 : 1)
        }) else {
            if json {
                ctx.out(JSONOutput.object([("rollout", .null), ("stable", .string(try Digest.sha256Hex(bytes)))]))
            } else {
                ctx.out("\(path) is the stable manifest already: nothing to roll out\n")
            }
            return 0
        }
        return finished(ctx, record, exitOnRollBack: 1)
    }

    /// Prints a finished rollout; 0 when it succeeded, else `exitOnRollBack` (1 for a
    /// rollout that rolled back, 0 for an abort that did what it was asked).
    static func finished(_ ctx: CommandContext, _ record: RolloutRecord, exitOnRollBack: Int32) -> Int32 {
        if ctx.json {
            ctx.out(JSONOutput.object([("rollout", record.json)]))
        } else if record.state == "succeeded" {
            ctx.out("rollout \(record.id) succeeded: \(record.candidate) runs on \(record.hosts.count) host(s) and is the stable manifest\n")
        } else {
            var text = "rollout \(record.id) \(record.state): \(record.reason ?? "no reason recorded")\n"
            text += "every host it reached was sent back to \(record.previous.prefix(12))"
            text += record.stragglers.isEmpty ? "\n" : "; not back yet: \(record.stragglers.joined(separator: ", "))\n"
            if exitOnRollBack == 0 { ctx.out(text) } else { ctx.err("plugboard: error: " + text) }
        }
        return record.state == "succeeded" ? 0 : exitOnRollBack
    }

    private static func number(_ ctx: CommandContext, _ name: String, default value: Double,
                               range: ClosedRange<Double>) throws(PlugboardError) -> Double {
        guard let text = ctx.parsed.value(name) else { return value }
        guard let n = Double(text), n.isFinite, range.contains(n) else {
            throw UsageError.make("invalid --\(name) \"\(text)\"", detail: "Expected a number from \(CLISpec.seconds(range.lowerBound)) to \(CLISpec.seconds(range.upperBound)).")
        }
        return n
    }
}
