import PlugboardAPI
import PlugboardHost

/// `plugboard services`: every registration.
enum ServicesCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let host = try await ctx.startHost()
        let registrations = host.container.registrations()
        let isolated = Reports.isolatedOwners(host.records)
        await host.shutdown()
        try PluginsCommand.requireRequiredPlugins(host)
        if ctx.json {
            ctx.out(Reports.services(registrations, isolated: isolated))
        } else {
            // The WRAPS column only where a layer is: the table stays as it was without one.
            // The WRAPS and ISOLATION columns only where a layer or an isolated plugin is:
            // the table stays as it was without one.
            let layered = registrations.contains { $0.wraps != nil }
            let anyIsolated = registrations.contains { isolated.contains($0.owner) }
            var table = Table(["SERVICE", "NAME", "RANK", "SCOPE", "OWNER", "IMPLEMENTATION", "ACTIVE"] + (layered ? ["WRAPS"] : [])
                              + (anyIsolated ? ["ISOLATION"] : []))
            for r in registrations {
                table.add([r.service, r.name ?? "-", String(r.rank), r.scope.description, r.owner,
                           r.implementation ?? "-", r.isActive ? "yes" : "no"] + (layered ? [r.wraps ?? "-"] : [])
                          + (anyIsolated ? [isolated.contains(r.owner) ? "process" : "in-process"] : []))
            }
            ctx.out(table.render())
        }
        return 0
    }
}
