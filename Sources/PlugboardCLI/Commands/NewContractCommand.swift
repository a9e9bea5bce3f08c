import PlugboardAPI
import PlugboardHost

/// `plugboard new-contract NAME [--dir PATH]`: writes a contract package for a service
/// protocol of one's own and a package with a provider and a consumer of it. The checks
/// and the writing are new-plugin's (``NewPluginCommand``); only the files differ.
enum NewContractCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let name = ctx.parsed.arguments[0]
        try NewPluginCommand.validate(name: name, kind: "contract")
        // The packages and plugins are named after the protocol: each name must be free too.
        for module in ContractScaffold.moduleNames(name) {
            try NewPluginCommand.validate(name: module, kind: "contract")
        }
        let (sdk, directory) = try NewPluginCommand.prepare(ctx, name: name, command: "new-contract")
        let scaffold = ContractScaffold(name: name, sdk: sdk, directory: directory, header: .expected)
        let written = try NewPluginCommand.write(scaffold.files, in: directory)
        if ctx.json {
            ctx.out(NewPluginCommand.created(directory: directory, sdk: sdk, files: written))
        } else {
            var text = "Created contract \(name) in \(directory):\n"
            for file in written { text += "  \(file)\n" }
            text += "\nNext:\n  cd \(directory)/\(scaffold.plugins)\n  swift build -c release\n  swift test\n"
            text += "Then add plugins.snippet.json's entries to plugins.json and run plugboard check.\n"
            ctx.out(text)
        }
        return 0
    }
}
