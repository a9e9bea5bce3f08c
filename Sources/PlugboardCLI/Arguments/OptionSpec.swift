/// One option a command accepts: `--manifest PATH`, `--json`, `--meta k=v` (repeatable).
struct OptionSpec: Sendable {
    /// The long name without dashes: `manifest`.
    let name: String
    /// A one-letter short name without the dash, if any: `o`.
    let short: Character?
    /// The value's placeholder in help (`PATH`), or nil for a flag.
    let valueName: String?
    /// A sentence ending in a period.
    let help: String
    /// Whether it may be given more than once.
    let repeatable: Bool
    /// The default shown in help, if any.
    let defaultText: String?
    /// What a shell offers for the value (`plugboard completion`).
    let completion: ValueCompletion

    static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help, repeatable: false, defaultText: nil,
                   completion: .none)
    }

    /// `completion` defaults from the placeholder: a `PATH` or `FILE` is a file name.
    static func value(_ name: String, short: Character? = nil, _ valueName: String, help: String,
                      repeatable: Bool = false, default defaultText: String? = nil,
                      completion: ValueCompletion? = nil) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help, repeatable: repeatable,
                   defaultText: defaultText, completion: completion ?? ValueCompletion(placeholder: valueName))
    }

    var isFlag: Bool { valueName == nil }

    /// `-o, --output FILE` as help shows it.
    var synopsis: String {
        var s = short.map { "-\($0), " } ?? ""
        s += "--\(name)"
        if let v = valueName { s += " \(v)" }
        return s
    }
}

/// One positional argument.
struct ArgumentSpec: Sendable {
    let name: String
    let help: String
    let optional: Bool
    /// What a shell offers for it (`plugboard completion`).
    let completion: ValueCompletion

    init(name: String, help: String, optional: Bool, completion: ValueCompletion? = nil) {
        self.name = name
        self.help = help
        self.optional = optional
        self.completion = completion ?? ValueCompletion(placeholder: name)
    }
}

/// What a shell completes for an option's value or an argument.
enum ValueCompletion: Sendable, Equatable {
    /// Nothing the shell can know (a key, a URL, a number).
    case none
    case file
    case directory
    /// One of these words, which the command also checks the value against.
    case choices([String])

    init(placeholder: String) {
        self = placeholder == "PATH" || placeholder == "FILE" ? .file : .none
    }
}
