import PlugboardAPI

extension PlugboardError.Code {
    /// The command line is wrong: an unknown option, a missing value or argument.
    public static let usage: Self = "cli.usage"
}

/// Errors of the command line itself; the CLI exits with status 2 for them.
enum UsageError {
    static func make(_ message: String, detail: String? = nil, hint: String? = nil) -> PlugboardError {
        PlugboardError(.usage, message, detail: detail, hint: hint)
    }

    /// "Did you mean ...?" for the closest of `candidates`, if it is close enough.
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, word.count / 3) else { return nil }
        return best.0
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count), cur = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
