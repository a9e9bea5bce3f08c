import PlugboardAPI
import PlugboardHost

/// `plugboard plugins` and `plugboard check`: the plugins and their states.
enum PluginsCommand {
    /// `plugins`: exits 0 unless a required plugin is not active. The list is printed
    /// either way (it shows why); the error then goes to standard error, or, with
    /// `--json`, stays in the failed plugin's `error` member, so that standard output
    /// holds one JSON document.
    static func plugins(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let host = try await ctx.startHost()
        await host.shutdown()
        print(host, ctx, withServices: false)
        guard let failure = requiredFailure(host) else { return 0 }
        return ctx.json ? PlugboardCLI.exitStatus(for: failure) : PlugboardCLI.report(failure, json: false, usage: false)
    }

    /// `check`: exits 1 if any selected plugin failed or was rejected.
    static func check(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let host = try await ctx.startHost()
        await host.shutdown()
        print(host, ctx, withServices: true)
        let bad = host.records.filter { $0.state == .failed || $0.state == .rejected }
        if !ctx.json {
            let active = host.records.filter { $0.state == .active }.count
            ctx.err(bad.isEmpty
                ? "check passed: \(active) plugin\(active == 1 ? "" : "s") active in \(host.environment)\n"
                : "check failed: \(bad.count) of the selected plugins did not load\n")
        }
        return bad.isEmpty ? 0 : 1
    }

    static func print(_ host: PluginHost, _ ctx: CommandContext, withServices: Bool) {
        if ctx.json {
            ctx.out(Reports.plugins(host))
            return
        }
        var table = Table(["PLUGIN", "STATE", "VERSION", "SERVICES", "ERROR"])
        for r in host.records {
            table.add([r.name, r.state.description, r.version ?? "-",
                       r.services.isEmpty ? "-" : r.services.joined(separator: ", "),
                       r.error.map { "\($0.code): \($0.message)" } ?? "-"])
        }
        ctx.out(table.render())
        for r in host.records {
            guard let e = r.error, e.detail != nil || e.hint != nil else { continue }
            var lines = "\n\(r.name): \(e.code): \(e.message)\n"
            if let d = e.detail { lines += "  DETAIL: \(d)\n" }
            if let h = e.hint { lines += "  HINT: \(h)\n" }
            ctx.out(lines)
        }
    }

    /// Throws the error of the first required plugin that is not active, if any: the
    /// host does not start without it.
    static func requireRequiredPlugins(_ host: PluginHost) throws(PlugboardError) {
        if let failure = requiredFailure(host) { throw failure }
    }

    /// The error of the first required plugin that is not active, if any.
    static func requiredFailure(_ host: PluginHost) -> PlugboardError? {
        guard let first = host.requiredFailures.first else { return nil }
        return PlugboardError(.requiredPluginFailed, "required plugin \"\(first.name)\" is \(first.state)",
            detail: first.error.map { "\($0.code): \($0.message)." + ($0.detail.map { " \($0)" } ?? "") },
            hint: first.error?.hint ?? "Run plugboard check to see every plugin's state.")
    }
}

extension PlugboardError.Code {
    /// A plugin the manifest marks `required` is not active.
    public static let requiredPluginFailed: Self = "cli.required_plugin_failed"
}
