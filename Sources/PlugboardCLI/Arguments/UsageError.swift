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

    /// "Did you mean ...?" for the closest of `candidates`, if it is close enough; the
    /// manifest's rule (PlugboardHost's `Spelling`), so that both say the same.
    ///
    /// Case is ignored. A candidate is close when its edit distance to `word` is at most
    /// a third of the longer word (at least 2), or when the two share a prefix of at least
    /// four characters (or all of a shorter `word` of three or more: `dev`, `prod`).
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let w = Array(word.lowercased())
        guard !w.isEmpty, w.count <= 64 else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let c = Array(candidate.lowercased())
            let d = distance(String(w), String(c))
            let prefix = zip(w, c).prefix { $0 == $1 }.count
            let close = d <= max(2, max(w.count, c.count) / 3) || prefix >= 4 || (w.count >= 3 && prefix == w.count)
            guard close, d < (best?.distance ?? Int.max) else { continue }
            best = (candidate, d)
        }
        return best?.candidate
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
