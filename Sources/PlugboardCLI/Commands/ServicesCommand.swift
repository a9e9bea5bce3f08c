import PlugboardAPI
import PlugboardHost

/// `plugboard services`: every registration.
enum ServicesCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let host = try await ctx.startHost()
        let registrations = host.container.registrations()
        await host.shutdown()
        try PluginsCommand.requireRequiredPlugins(host)
        if ctx.json {
            ctx.out(Reports.services(registrations))
        } else {
            // The WRAPS column only where a layer is: the table stays as it was without one.
            let layered = registrations.contains { $0.wraps != nil }
            var table = Table(["SERVICE", "NAME", "RANK", "SCOPE", "OWNER", "IMPLEMENTATION", "ACTIVE"] + (layered ? ["WRAPS"] : []))
            for r in registrations {
                table.add([r.service, r.name ?? "-", String(r.rank), r.scope.description, r.owner,
                           r.implementation ?? "-", r.isActive ? "yes" : "no"] + (layered ? [r.wraps ?? "-"] : []))
            }
            ctx.out(table.render())
        }
        return 0
    }
}
