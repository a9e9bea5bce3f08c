import PlugboardAPI
import PlugboardHost

/// `plugboard plugins` and `plugboard check`: the plugins and their states.
enum PluginsCommand {
    /// `plugins`: exits 0 unless a required plugin is not active. The list is printed
    /// either way (it shows why); the error then goes to standard error, or, with
    /// `--json`, stays in the failed plugin's `error` member, so that standard output
    /// holds one JSON document.
    static func plugins(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let host = try await ctx.startHost(reportsPlugins: true)
        await host.shutdown()
        print(host.records, ctx)
        guard let failure = requiredFailure(host) else { return 0 }
        if ctx.json { return PlugboardCLI.exitStatus(for: failure) }
        // The plugin's own error is printed just above: the exit reason only points at it.
        return PlugboardCLI.report(PlugboardError(failure.code, failure.message, hint: "Its error is shown above."), json: false)
    }

    /// `check`: exits 1 if any selected plugin failed or was rejected. By default every
    /// plugin is checked in a preflight child process (`--in-process`: in this one), so a
    /// plugin that crashes, hangs or exits is reported by name.
    static func check(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let records: [PluginRecord]
        let environment: Environment
        let manifest: Manifest
        if ctx.parsed.flag("in-process") {
            let host = try await ctx.startHost(reportsPlugins: true, checkOnly: true)
            await host.shutdown()
            records = host.records
            environment = host.environment
            manifest = host.manifest
        } else {
            var configuration = ctx.hostConfiguration
            // check leaves the file system as it found it: the plugins' starts create nothing.
            configuration.checkOnly = true
            (manifest, environment, records) = try await PluginHost.preflightCheck(configuration)
        }
        let stale = StaleBuild.find(in: records, manifest: manifest)
        if ctx.json {
            ctx.out(Reports.checkedPlugins(records, staleBuilds: stale))
        } else {
            print(records, ctx)
            for (name, build) in stale.sorted(by: { $0.key < $1.key }) {
                ctx.err(Self.warningText(plugin: name, build.warning))
            }
        }
        let bad = records.filter { $0.state == .failed || $0.state == .rejected }
        if !ctx.json {
            let active = records.filter { $0.state == .active }.count
            ctx.err(bad.isEmpty
                ? "check passed: \(active) plugin\(active == 1 ? "" : "s") active in \(environment)\n"
                : "check failed: \(bad.count) of the selected plugins did not load\n")
        }
        return bad.isEmpty ? 0 : 1
    }

    /// A warning as the CLI prints one: the error's shape under `warning:`.
    static func warningText(plugin: String, _ w: PlugboardError) -> String {
        var text = "plugboard: warning: \(plugin): \(w.message)\n"
        if let d = w.detail { text += "DETAIL: \(d)\n" }
        if let h = w.hint { text += "HINT: \(h)\n" }
        return text
    }

    static func print(_ records: [PluginRecord], _ ctx: CommandContext) {
        if ctx.json {
            ctx.out(Reports.plugins(records))
            return
        }
        // Each failure told once: its code in the table, its message, detail and hint in
        // the block under it.
        var table = Table(["PLUGIN", "STATE", "VERSION", "SERVICES", "ERROR"])
        for r in records {
            table.add([r.name, r.state.description, r.version ?? "-",
                       r.services.isEmpty ? "-" : r.services.joined(separator: ", "),
                       r.error.map { $0.code.rawValue } ?? "-"])
        }
        ctx.out(table.render())
        for r in records {
            guard let e = r.error else { continue }
            var lines = "\n\(r.name): \(e.code): \(e.message)\n"
            if let d = e.detail { lines += "  DETAIL: \(d)\n" }
            if let h = e.hint { lines += "  HINT: \(h)\n" }
            ctx.out(lines)
        }
    }

    /// Throws the error of the first required plugin that is not active, if any: the
    /// host's one rule for `required` (``PluginHost/requiredFailure``).
    static func requireRequiredPlugins(_ host: PluginHost) throws(PlugboardError) {
        if let failure = host.requiredFailure { throw failure }
    }

    /// The error of the first required plugin that is not active, if any.
    static func requiredFailure(_ host: PluginHost) -> PlugboardError? {
        host.requiredFailure
    }
}
