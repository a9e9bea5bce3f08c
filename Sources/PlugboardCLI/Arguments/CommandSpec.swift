/// A command or subcommand: its name, help text, options, arguments and subcommands, in
/// swift-argument-parser's shape (help sits beside each declaration).
struct CommandSpec: Sendable {
    let name: String
    /// One sentence for the command list.
    let abstract: String
    /// Paragraphs for the command's own help.
    let discussion: String
    let options: [OptionSpec]
    let arguments: [ArgumentSpec]
    let subcommands: [CommandSpec]
    /// The global options this command acts on, when not all of them: its help lists only
    /// those (`inspect` reads no manifest, so `--manifest` and `--env` are not offered
    /// there), and the parser refuses the others.
    let globals: Set<String>?

    init(name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
         arguments: [ArgumentSpec] = [], subcommands: [CommandSpec] = [], globals: Set<String>? = nil) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.globals = globals
    }

    func subcommand(_ name: String) -> CommandSpec? { subcommands.first { $0.name == name } }
}

extension Array where Element == CommandSpec {
    /// The global options the last command of this chain (root first) acts on: what its
    /// help lists, its completion offers and the parser accepts.
    var offeredGlobals: [OptionSpec] {
        let allowed = compactMap(\.globals).last
        return dropLast().flatMap(\.options).filter { allowed?.contains($0.name) ?? true }
    }

    /// Every option the last command of this chain accepts: its own, then the globals.
    var offeredOptions: [OptionSpec] { (last?.options ?? []) + offeredGlobals }
}
