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

    init(name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
         arguments: [ArgumentSpec] = [], subcommands: [CommandSpec] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
    }

    func subcommand(_ name: String) -> CommandSpec? { subcommands.first { $0.name == name } }
}
