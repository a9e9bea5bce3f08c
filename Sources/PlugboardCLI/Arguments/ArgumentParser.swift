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
                    guard let sub = command.subcommand(word) else {
                        let names = command.subcommands.map(\.name)
                        let hint = UsageError.suggestion(for: word, among: names).map { "Did you mean \"\($0)\"?" }
                        throw UsageError.make("unknown command \"\(word)\"\(command.name == root.name ? "" : " for \"\(parsed.path.joined(separator: " "))\"")",
                            detail: "Expected one of: \(names.joined(separator: ", ")).",
                            hint: hint ?? "Run with --help to see the commands.")
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
                    throw UsageError.make("unknown option \"\(word)\"", hint: "Run with --help to see the options.")
                }
                name = spec.name
            }
            guard let spec = options().first(where: { $0.name == name }) else {
                let all = options().map(\.name) + ["help"]
                let hint = UsageError.suggestion(for: name, among: all).map { "Did you mean \"--\($0)\"?" }
                throw UsageError.make("unknown option \"--\(name)\"",
                    hint: hint ?? "Run \"\((["plugboard"] + parsed.path).joined(separator: " ")) --help\" to see the options.")
            }
            if spec.isFlag {
                if inline != nil { throw UsageError.make("option \"--\(name)\" takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < argv.count else {
                    throw UsageError.make("missing value for option \"--\(name)\"",
                                          detail: "Expected \(spec.valueName ?? "a value") after it.")
                }
                value = argv[i]
                i += 1
            }
            if !spec.repeatable, parsed.values[name] != nil {
                throw UsageError.make("option \"--\(name)\" given more than once")
            }
            parsed.values[name, default: []].append(value)
        }
        if parsed.wantsHelp { return parsed }
        if !command.subcommands.isEmpty && command.arguments.isEmpty {
            let names = command.subcommands.map(\.name).joined(separator: ", ")
            throw UsageError.make(parsed.path.isEmpty ? "missing command" : "missing subcommand for \"\(parsed.path.joined(separator: " "))\"",
                                  detail: "Expected one of: \(names).", hint: "Run with --help to see what each does.")
        }
        let required = command.arguments.filter { !$0.optional }.count
        if parsed.arguments.count < required {
            let missing = command.arguments[parsed.arguments.count]
            throw UsageError.make("missing argument \(missing.name) for \"\(parsed.path.joined(separator: " "))\"",
                                  detail: missing.help, hint: "Run \"\((["plugboard"] + parsed.path).joined(separator: " ")) --help\" for usage.")
        }
        if parsed.arguments.count > command.arguments.count {
            throw UsageError.make("unexpected argument \"\(parsed.arguments[command.arguments.count])\" for \"\(parsed.path.joined(separator: " "))\"",
                                  hint: "Run \"\((["plugboard"] + parsed.path).joined(separator: " ")) --help\" for usage.")
        }
        return parsed
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
        var out = "OVERVIEW: \(command.abstract)\n"
        if !command.discussion.isEmpty { out += "\n\(command.discussion)\n" }
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
            for o in chain.dropLast().flatMap(\.options) {
                out += Self.row(o.synopsis, o.help + (o.defaultText.map { " (default: \($0))" } ?? ""))
            }
        }
        out += Self.row("-h, --help", "Show help information.")
        if !command.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in command.subcommands { out += Self.row(s.name, s.abstract) }
            out += "\n  See '\(invocation) help <subcommand>' or '\(invocation) <subcommand> --help' for detailed help.\n"
        }
        return out
    }

    private static func row(_ left: String, _ right: String) -> String {
        let pad = left.count < 24 ? String(repeating: " ", count: 24 - left.count) : "\n" + String(repeating: " ", count: 26)
        return "  \(left)\(pad)\(right)\n"
    }
}
