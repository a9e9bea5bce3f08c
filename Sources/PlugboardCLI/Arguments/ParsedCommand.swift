/// The result of parsing: which command, and what was given to it.
struct ParsedCommand: Sendable {
    /// The command path without the executable: `["storage", "put"]`.
    var path: [String]
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var arguments: [String] = []
    /// `--help` was given.
    var wantsHelp = false

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
}
