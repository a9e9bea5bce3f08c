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
        try NewPluginCommand.write(scaffold.files, in: directory, sdk: sdk, ctx, created: "contract \(name)",
                                   buildIn: "\(directory)/\(scaffold.plugins)", entries: "entries")
        return 0
    }
}
