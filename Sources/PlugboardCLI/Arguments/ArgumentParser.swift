import PlugboardAPI

/// Parses a command line against a tree of ``CommandSpec``s.
///
/// Global options (the root's) are accepted anywhere, before or after the subcommand.
/// `--name=value` and `--name value` both work; `--` ends options. Every error names the
/// offending word and, where one is close, what was probably meant.
struct ArgumentParser {
    let root: CommandSpec

    func parse(_ argv: [String]) throws(PlugboardError) -> ParsedCommand {
        var parsed = ParsedCommand(path: [])
        var command = root
        var chain = [root]
        var i = 0
        var onlyArguments = false

        func options() -> [OptionSpec] { chain.flatMap(\.options) }

        while i < argv.count {
            let word = argv[i]
            i += 1
            if onlyArguments || word == "-" || !word.hasPrefix("-") {
                // A subcommand is only recognised before the first positional argument.
                if !onlyArguments, parsed.arguments.isEmpty, !command.subcommands.isEmpty {
                    // `plugboard help storage put` and `plugboard storage help put`, as the
                    // help screens advertise: the words after `help` name the command.
                    if word == "help" && command.subcommand(word) == nil {
                        parsed.wantsHelp = true
                        continue
                    }
                    guard let sub = command.subcommand(word) else {
                        let names = command.subcommands.map(\.name)
                        let hint = UsageError.suggestion(for: word, among: names).map { "Did you mean \"\($0)\"?" }
                        throw UsageError.make("unknown command \"\(word)\"\(command.name == root.name ? "" : " for \"\(parsed.path.joined(separator: " "))\"")",
                            detail: "Expected one of: \(names.joined(separator: ", ")).",
                            hint: hint ?? UsageError.helpHint(parsed.path))
                    }
                    command = sub
                    chain.append(sub)
                    parsed.path.append(word)
                    continue
                }
                parsed.arguments.append(word)
                continue
            }
            if word == "--" { onlyArguments = true; continue }
            if word == "--help" || word == "-h" { parsed.wantsHelp = true; continue }

            var name: String
            var inline: String?
            if word.hasPrefix("--") {
                let body = word.dropFirst(2)
                if let eq = body.firstIndex(of: "=") {
                    name = String(body[..<eq])
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = String(body)
                }
            } else {
                guard word.count == 2, let c = word.last,
                      let spec = options().first(where: { $0.short == c }) else {
                    throw UsageError.make("unknown option \"\(word)\"", hint: UsageError.helpHint(parsed.path))
                }
                name = spec.name
            }
            guard let spec = options().first(where: { $0.name == name }) else {
                let all = options().map(\.name) + ["help"]
                let hint = UsageError.suggestion(for: name, among: all).map { "Did you mean \"--\($0)\"?" }
                throw UsageError.make("unknown option \"--\(name)\"", hint: hint ?? UsageError.helpHint(parsed.path))
            }
            if spec.isFlag {
                if inline != nil { throw UsageError.make("option \"--\(name)\" takes no value", hint: UsageError.helpHint(parsed.path)) }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < argv.count else {
                    throw UsageError.make("missing value for option \"--\(name)\"",
                                          detail: "Expected \(spec.valueName ?? "a value") after it.",
                                          hint: UsageError.helpHint(parsed.path))
                }
                value = argv[i]
                i += 1
            }
            if !spec.repeatable, parsed.values[name] != nil {
                throw UsageError.make("option \"--\(name)\" given more than once", hint: UsageError.helpHint(parsed.path))
            }
            parsed.values[name, default: []].append(value)
        }
        // Help and version need no subcommand or arguments.
        if parsed.wantsHelp || parsed.flags.contains("version") { return parsed }
        try refuseUnusedGlobals(parsed, chain: chain)
        if !command.subcommands.isEmpty && command.arguments.isEmpty {
            let names = command.subcommands.map(\.name).joined(separator: ", ")
            throw UsageError.make(parsed.path.isEmpty ? "missing command" : "missing subcommand for \"\(parsed.path.joined(separator: " "))\"",
                                  detail: "Expected one of: \(names).", hint: UsageError.helpHint(parsed.path))
        }
        let required = command.arguments.filter { !$0.optional }.count
        if parsed.arguments.count < required {
            let missing = command.arguments[parsed.arguments.count]
            throw UsageError.make("missing argument \(missing.name) for \"\(parsed.path.joined(separator: " "))\"",
                                  detail: missing.help, hint: UsageError.helpHint(parsed.path))
        }
        if parsed.arguments.count > command.arguments.count {
            throw UsageError.make("unexpected argument \"\(parsed.arguments[command.arguments.count])\" for \"\(parsed.path.joined(separator: " "))\"",
                                  hint: UsageError.helpHint(parsed.path))
        }
        return parsed
    }

    /// A global option the command does not act on (`--manifest` for `inspect`) is an
    /// error, not silently dropped: whoever gave it expected it to matter. Its help does
    /// not list it either (``CommandSpec/globals``).
    private func refuseUnusedGlobals(_ parsed: ParsedCommand, chain: [CommandSpec]) throws(PlugboardError) {
        let offered = Set(chain.offeredOptions.map(\.name))
        let given = Set(parsed.values.keys).union(parsed.flags)
        guard let unused = chain.dropLast().flatMap(\.options).map(\.name).first(where: { given.contains($0) && !offered.contains($0) })
        else { return }
        let command = (["plugboard"] + parsed.path).joined(separator: " ")
        let globals = chain.offeredGlobals.map { "--\($0.name)" }
        throw UsageError.make("option \"--\(unused)\" does not apply to \"\(parsed.path.joined(separator: " "))\"",
                              detail: "\(command) \(globals.isEmpty ? "takes no global options" : "takes only the global options \(globals.joined(separator: ", "))"); leave out --\(unused).",
                              hint: UsageError.helpHint(parsed.path))
    }

    /// The help screen of the command at `path`.
    func help(for path: [String]) -> String {
        var command = root
        var chain = [root]
        for p in path {
            guard let sub = command.subcommand(p) else { break }
            command = sub
            chain.append(sub)
        }
        let invocation = (["plugboard"] + path).joined(separator: " ")
        var out = Self.wrap("OVERVIEW: \(command.abstract)", width: Self.width).joined(separator: "\n") + "\n"
        if !command.discussion.isEmpty {
            let paragraphs = command.discussion.split(separator: "\n", omittingEmptySubsequences: false)
            out += "\n" + paragraphs.map { Self.wrap(String($0), width: Self.width).joined(separator: "\n") }
                .joined(separator: "\n") + "\n"
        }
        var usage = "\nUSAGE: \(invocation)"
        if !command.subcommands.isEmpty { usage += " <subcommand>" }
        if !command.options.isEmpty || chain.count > 1 { usage += " [<options>]" }
        for a in command.arguments { usage += a.optional ? " [\(a.name)]" : " \(a.name)" }
        out += usage + "\n"
        if !command.arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in command.arguments { out += Self.row(a.name, a.help) }
        }
        let own = command.options
        if !own.isEmpty {
            out += "\nOPTIONS:\n"
            for o in own { out += Self.row(o.synopsis, o.help + (o.defaultText.map { " (default: \($0))" } ?? "")) }
        }
        if chain.count > 1 {
            out += "\nGLOBAL OPTIONS:\n"
            for o in chain.offeredGlobals {
                out += Self.row(o.synopsis, o.help + (o.defaultText.map { " (default: \($0))" } ?? ""))
            }
        }
        out += Self.row("-h, --help", "Show help information.")
        if !command.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in command.subcommands { out += Self.row(s.name, s.abstract) }
            out += "\n  See '\(invocation) help <subcommand>' for detailed help.\n"
        }
        return out
    }

    /// Help screens are wrapped to this many columns, as swift-argument-parser's are on an
    /// 80-column terminal.
    static let width = 80

    /// One option, argument or subcommand: the name in two columns of indent, the help
    /// from column 27, wrapped; a name too long for its column gets a line of its own.
    private static func row(_ left: String, _ right: String) -> String {
        let indent = String(repeating: " ", count: 26)
        let lines = wrap(right, width: width - indent.count)
        let first = left.count < 24 ? "  " + left + String(repeating: " ", count: 24 - left.count)
                                    : "  " + left + "\n" + indent
        return first + lines.joined(separator: "\n" + indent) + "\n"
    }

    /// `text`'s words in lines of at most `width` characters (a longer word stands alone).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        lines.append(line)
        return lines
    }
}
