/// The words after a subcommand, read one option at a time; every mistake ends the run
/// through `fail` (usage, exit 2). One reader for every subcommand's options.
struct BenchArguments {
    private let words: [String]
    private var index = 0

    init(_ words: [String]) { self.words = words }

    /// The next option, or nil at the end.
    mutating func next() -> String? {
        guard index < words.count else { return nil }
        defer { index += 1 }
        return words[index]
    }

    /// The value that must follow `flag`.
    mutating func value(_ flag: String) -> String {
        guard let word = next() else { fail("\(flag) needs a value") }
        return word
    }

    /// A whole number in `range` after `flag`; `what` names it in the refusal.
    mutating func integer(_ flag: String, in range: ClosedRange<Int>, what: String) -> Int {
        guard let n = Int(value(flag)), range.contains(n) else { fail("\(flag) needs \(what)") }
        return n
    }

    /// Comma-separated case names after `flag`, each one of `known`.
    mutating func cases(_ flag: String, known: [String]) -> [String] {
        let names = value(flag).split(separator: ",").map(String.init)
        for name in names where !known.contains(name) { fail("unknown case '\(name)'") }
        return names
    }
}
