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
            var table = Table(["SERVICE", "NAME", "RANK", "SCOPE", "OWNER", "IMPLEMENTATION", "ACTIVE"])
            for r in registrations {
                table.add([r.service, r.name ?? "-", String(r.rank), r.scope.description, r.owner,
                           r.implementation ?? "-", r.isActive ? "yes" : "no"])
            }
            ctx.out(table.render())
        }
        return 0
    }
}
