import PlugboardAPI

/// The completion scripts of `plugboard completion`, written from the same command tree
/// the parser and the help read (``CLISpec/root``), so a new command or option is
/// completed as soon as it is parsed.
///
/// bash and zsh share the tables (shell functions in the syntax both read) and walk the
/// words alike: subcommands until the first argument, an option's value skipped, `--`
/// ending options, as ``ArgumentParser`` does. fish gets the same tables in its own syntax.
struct CompletionScript {
    enum Shell: String, CaseIterable, Sendable {
        case bash, zsh, fish
    }

    /// One command of the tree, with the chain from the root that reaches it.
    struct Node {
        let path: [String]
        let chain: [CommandSpec]
        var command: CommandSpec { chain[chain.count - 1] }
        var key: String { path.joined(separator: " ") }
    }

    let nodes: [Node]

    init(root: CommandSpec) {
        var nodes: [Node] = []
        func visit(_ chain: [CommandSpec], _ path: [String]) {
            nodes.append(Node(path: path, chain: chain))
            for sub in chain[chain.count - 1].subcommands { visit(chain + [sub], path + [sub.name]) }
        }
        visit([root], [])
        self.nodes = nodes
    }

    func script(for shell: Shell) -> String {
        switch shell {
        case .bash: return bash
        case .zsh: return zsh
        case .fish: return fish
        }
    }

    // MARK: - bash and zsh

    /// `words a b`, `file`, `directory` or `any`: what `_plugboard_complete` offers.
    private static func kind(_ completion: ValueCompletion) -> String {
        switch completion {
        case .none: return "any"
        case .file: return "file"
        case .directory: return "directory"
        case .choices(let words): return "words " + words.joined(separator: " ")
        }
    }

    private static func names(_ option: OptionSpec) -> [String] {
        ["--\(option.name)"] + (option.short.map { ["-\($0)"] } ?? [])
    }

    /// The functions both shells read: subcommands, options, option values, arguments.
    private var tables: String {
        var subcommands = "", options = "", values = "", arguments = ""
        for node in nodes {
            if !node.command.subcommands.isEmpty {
                subcommands += "        \"\(node.key)\") printf '%s\\n' \"\(node.command.subcommands.map(\.name).joined(separator: " "))\" ;;\n"
            }
            let offered = node.chain.offeredOptions
            let words = offered.flatMap(Self.names) + ["--help", "-h"]
            options += "        \"\(node.key)\") printf '%s\\n' \"\(words.joined(separator: " "))\" ;;\n"
            for option in offered where !option.isFlag {
                let keys = Self.names(option).map { "\"\(node.key) \($0)\"" }.joined(separator: "|")
                values += "        \(keys)) printf '%s\\n' \"\(Self.kind(option.completion))\" ;;\n"
            }
            for (i, argument) in node.command.arguments.enumerated() {
                arguments += "        \"\(node.key) \(i)\") printf '%s\\n' \"\(Self.kind(argument.completion))\" ;;\n"
            }
        }
        return """
            # The subcommands of command $1 (words joined by spaces, "" for plugboard itself).
            _plugboard_subcommands() {
                case "$1" in
            \(subcommands)    esac
            }
            # The options command $1 accepts.
            _plugboard_options() {
                case "$1" in
            \(options)    esac
            }
            # What option $2 of command $1 takes: "words ...", file, directory or any;
            # nothing for a flag.
            _plugboard_value() {
                case "$1 $2" in
            \(values)    esac
            }
            # What argument $2 (from 0) of command $1 takes.
            _plugboard_argument() {
                case "$1 $2" in
            \(arguments)    esac
            }

            """
    }

    /// The word walk both shells run over the words before the cursor, given as
    /// arguments: sets `_plugboard_command`, `_plugboard_arguments` (how many) and
    /// `_plugboard_pending` (the option whose value the cursor is on, if any).
    private static let walk = """
        _plugboard_walk() {
            _plugboard_command="" _plugboard_arguments=0 _plugboard_pending=""
            local word only=""
            for word in "$@"; do
                # bash splits --name=value at the "=" (COMP_WORDBREAKS): the value follows.
                if [ "$word" = "=" ] && [ -n "$_plugboard_pending" ]; then continue; fi
                if [ -n "$_plugboard_pending" ]; then _plugboard_pending=""; continue; fi
                if [ -z "$only" ]; then
                    case "$word" in
                        --) only=1; continue ;;
                        --*=*) continue ;;
                        -?*)
                            if [ -n "$(_plugboard_value "$_plugboard_command" "$word")" ]; then _plugboard_pending=$word; fi
                            continue ;;
                    esac
                fi
                if [ -z "$only" ] && [ "$_plugboard_arguments" = 0 ]; then
                    case " $(_plugboard_subcommands "$_plugboard_command") " in
                        *" $word "*) _plugboard_command=${_plugboard_command:+$_plugboard_command }$word; continue ;;
                    esac
                    # `plugboard help storage put` names a command, as the parser reads it.
                    if [ "$word" = help ] && [ -n "$(_plugboard_subcommands "$_plugboard_command")" ]; then continue; fi
                fi
                _plugboard_arguments=$((_plugboard_arguments + 1))
            done
        }

        """

    var bash: String {
        "# bash completion for plugboard, written by `plugboard completion bash` from the command\n"
            + "# tree its parser reads. Load it with: source <(plugboard completion bash)\n\n"
            + tables + Self.walk + """
            _plugboard_offer() {
                local IFS=$'\\n'
                case "$1" in
                    words\\ *) COMPREPLY=($(IFS=' '; compgen -W "${1#words }" -- "$2")) ;;
                    file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$2")) ;;
                    directory) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$2")) ;;
                    *) COMPREPLY=() ;;
                esac
            }

            _plugboard() {
                local cur=${COMP_WORDS[COMP_CWORD]}
                _plugboard_walk "${COMP_WORDS[@]:1:COMP_CWORD-1}"
                if [ "$cur" = "=" ] && [ -n "$_plugboard_pending" ]; then cur=""; fi
                if [ -n "$_plugboard_pending" ]; then
                    _plugboard_offer "$(_plugboard_value "$_plugboard_command" "$_plugboard_pending")" "$cur"
                    return
                fi
                case "$cur" in
                    -*) _plugboard_offer "words $(_plugboard_options "$_plugboard_command")" "$cur"; return ;;
                esac
                local subcommands
                subcommands=$(_plugboard_subcommands "$_plugboard_command")
                if [ "$_plugboard_arguments" = 0 ] && [ -n "$subcommands" ]; then
                    _plugboard_offer "words $subcommands" "$cur"
                    return
                fi
                _plugboard_offer "$(_plugboard_argument "$_plugboard_command" "$_plugboard_arguments")" "$cur"
            }

            complete -F _plugboard plugboard

            """
    }

    var zsh: String {
        "#compdef plugboard\n"
            + "# zsh completion for plugboard, written by `plugboard completion zsh` from the command\n"
            + "# tree its parser reads. Save it as _plugboard in a folder of $fpath.\n\n"
            + tables + Self.walk + """
            _plugboard_offer() {
                case "$1" in
                    words\\ *) compadd -- ${=${1#words }} ;;
                    file) _files ;;
                    directory) _files -/ ;;
                    *) _message -e value "${2:-value}" ;;
                esac
            }

            _plugboard() {
                local cur=${words[CURRENT]}
                _plugboard_walk "${(@)words[2,CURRENT-1]}"
                if [ -z "$_plugboard_pending" ] && [[ $cur == --*=* ]]; then
                    _plugboard_pending=${cur%%=*}
                    compset -P '*='
                fi
                if [ -n "$_plugboard_pending" ]; then
                    _plugboard_offer "$(_plugboard_value "$_plugboard_command" "$_plugboard_pending")" "$_plugboard_pending"
                    return
                fi
                if [[ $cur == -* ]]; then
                    _plugboard_offer "words $(_plugboard_options "$_plugboard_command")"
                    return
                fi
                local subcommands
                subcommands=$(_plugboard_subcommands "$_plugboard_command")
                if [ "$_plugboard_arguments" = 0 ] && [ -n "$subcommands" ]; then
                    _plugboard_offer "words $subcommands"
                    return
                fi
                _plugboard_offer "$(_plugboard_argument "$_plugboard_command" "$_plugboard_arguments")" argument
            }

            # Autoloaded from $fpath the file is the function's body; sourced, it registers.
            if [ "${funcstack[1]}" = _plugboard ]; then
                _plugboard "$@"
            else
                compdef _plugboard plugboard
            fi

            """
    }

    // MARK: - fish

    /// A fish single-quoted word.
    private static func fishQuote(_ text: String) -> String {
        "'" + text.replacingOccurrences("\\", "\\\\").replacingOccurrences("'", "\\'") + "'"
    }

    var fish: String {
        var subcommands = "", values = "", completions = ""
        for node in nodes {
            let at = Self.fishQuote("__plugboard_at \(Self.fishQuote(node.key))")
            let first = Self.fishQuote("__plugboard_argument \(Self.fishQuote(node.key)) 0")
            if !node.command.subcommands.isEmpty {
                subcommands += "        case \(Self.fishQuote(node.key))\n            printf '%s\\n' \(node.command.subcommands.map(\.name).joined(separator: " "))\n"
                for sub in node.command.subcommands {
                    completions += "complete -c plugboard -n \(first) -f -a \(sub.name) -d \(Self.fishQuote(sub.abstract))\n"
                }
            }
            for option in node.chain.offeredOptions {
                var line = "complete -c plugboard -n \(at) -l \(option.name)"
                if let short = option.short { line += " -s \(short)" }
                if !option.isFlag {
                    for name in Self.names(option) { values += "        case \(Self.fishQuote("\(node.key) \(name)"))\n            echo value\n" }
                    switch option.completion {
                    case .none: line += " -x"
                    case .file: line += " -r -F"
                    case .directory: line += " -x -a '(__fish_complete_directories)'"
                    case .choices(let words): line += " -x -a " + Self.fishQuote(words.joined(separator: " "))
                    }
                }
                completions += line + " -d \(Self.fishQuote(option.help))\n"
            }
            for (i, argument) in node.command.arguments.enumerated() {
                let condition = Self.fishQuote("__plugboard_argument \(Self.fishQuote(node.key)) \(i)")
                switch argument.completion {
                case .none: continue
                case .file: completions += "complete -c plugboard -n \(condition) -F\n"
                case .directory: completions += "complete -c plugboard -n \(condition) -x -a '(__fish_complete_directories)'\n"
                case .choices(let words):
                    completions += "complete -c plugboard -n \(condition) -x -a \(Self.fishQuote(words.joined(separator: " "))) -d \(Self.fishQuote(argument.help))\n"
                }
            }
        }
        return """
            # fish completion for plugboard, written by `plugboard completion fish` from the
            # command tree its parser reads. Save it as ~/.config/fish/completions/plugboard.fish.

            function __plugboard_subcommands
                switch "$argv[1]"
            \(subcommands)    end
            end

            # Prints "value" when option $argv[2] of command $argv[1] takes a value.
            function __plugboard_value
                switch "$argv[1] $argv[2]"
            \(values)    end
            end

            # The command the words before the cursor reach, then how many arguments it has:
            # subcommands until the first argument, option values skipped, -- ends options.
            function __plugboard_state
                set -l command ''
                set -l arguments 0
                set -l pending 0
                set -l only 0
                for word in (commandline -opc)[2..-1]
                    if test $pending = 1
                        set pending 0
                        continue
                    end
                    if test $only = 0
                        if test "$word" = --
                            set only 1
                            continue
                        end
                        if string match -q -- '-?*' $word
                            if not string match -q -- '*=*' $word
                                set -l takes (__plugboard_value "$command" $word)
                                test -n "$takes"; and set pending 1
                            end
                            continue
                        end
                        if test $arguments = 0
                            if contains -- $word (__plugboard_subcommands "$command")
                                set command (string trim -- "$command $word")
                                continue
                            end
                            if test "$word" = help; and test -n "$(__plugboard_subcommands "$command")"
                                continue
                            end
                        end
                    end
                    set arguments (math $arguments + 1)
                end
                printf '%s\\n%s\\n' "$command" $arguments
            end

            function __plugboard_at
                set -l state (__plugboard_state)
                test "$state[1]" = "$argv[1]"
            end

            function __plugboard_argument
                set -l state (__plugboard_state)
                test "$state[1]" = "$argv[1]"; and test "$state[2]" = "$argv[2]"
            end

            # No file names unless a path is expected.
            complete -c plugboard -f
            \(completions)
            """
    }
}

extension String {
    /// Every `target` replaced by `replacement`, without Foundation.
    fileprivate func replacingOccurrences(_ target: Character, _ replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
