import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `plugboard graph`: plugins, their services and who requires whom.
enum GraphCommand {
    /// `--format`'s values, for the check and for completion.
    static let formats = ["dot", "json"]

    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let format = ctx.parsed.value("format") ?? "dot"
        guard formats.contains(format) else {
            throw UsageError.make("unknown graph format \"\(format)\"", detail: "Expected \(formats.joined(separator: " or ")).")
        }
        let host = try await ctx.startHost()
        await host.shutdown()
        try PluginsCommand.requireRequiredPlugins(host)
        let plugins = host.manifest.plugins
        let records = Dictionary(host.records.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        if format == "json" || ctx.json {
            ctx.out(.object([
                ("environment", .string(host.environment.name)),
                ("plugins", .array(plugins.map { p in
                    .object([("name", .string(p.name)), ("state", .string(records[p.name]?.state.description)),
                             ("requires", .array(p.requires.map { .string($0) })),
                             ("services", .array((records[p.name]?.services ?? []).map { .string($0) }))]
                            + (p.wraps.map { [("wraps", JSONOutput.string($0))] } ?? []))
                })),
            ]))
            return 0
        }
        var dot = "digraph plugboard {\n  rankdir=LR;\n  node [shape=box];\n"
        for p in plugins {
            let state = records[p.name]?.state.description ?? "unknown"
            dot += "  \(quote(p.name)) [label=\(quote("\(p.name)\n\(state)"))\(state == "active" ? "" : ", style=dashed")];\n"
            for s in records[p.name]?.services ?? [] {
                dot += "  \(quote("service:" + s)) [label=\(quote(s)), shape=ellipse];\n"
                dot += "  \(quote(p.name)) -> \(quote("service:" + s)) [label=\"provides\"];\n"
            }
            for r in p.requires { dot += "  \(quote(p.name)) -> \(quote(r)) [label=\"requires\", style=bold];\n" }
            if let w = p.wraps { dot += "  \(quote(p.name)) -> \(quote(w)) [label=\"wraps\", style=bold, color=blue];\n" }
        }
        ctx.out(dot + "}\n")
        return 0
    }

    static func quote(_ s: String) -> String {
        "\"" + s.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
            .replacingAll("\n", with: "\\n") + "\""
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
