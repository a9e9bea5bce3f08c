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

    static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help, repeatable: false, defaultText: nil)
    }

    static func value(_ name: String, short: Character? = nil, _ valueName: String, help: String,
                      repeatable: Bool = false, default defaultText: String? = nil) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help, repeatable: repeatable,
                   defaultText: defaultText)
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
}
