import PlugboardAPI

/// `plugboard completion SHELL`: prints the completion script for bash, zsh or fish.
enum CompletionCommand {
    static func run(_ ctx: CommandContext) throws(PlugboardError) -> Int32 {
        let name = ctx.parsed.arguments[0]
        guard let shell = CompletionScript.Shell(rawValue: name) else {
            let names = CompletionScript.Shell.allCases.map(\.rawValue)
            throw UsageError.make("unknown shell \"\(name)\" for \"completion\"", detail: "Expected one of: \(names.joined(separator: ", ")).",
                                  hint: UsageError.suggestion(for: name, among: names).map { "Did you mean \"\($0)\"?" }
                                      ?? UsageError.helpHint(ctx.parsed.path))
        }
        ctx.out(CompletionScript(root: CLISpec.root).script(for: shell))
        return 0
    }
}
