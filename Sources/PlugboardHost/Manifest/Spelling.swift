/// Finds the known word a misspelled one was probably meant to be, for "Did you mean"
/// hints: `plugin` -> `plugins`, `enviroments` -> `environments`, `prod` -> `production`.
public enum Spelling {
    /// The candidate closest to `word`, or nil when none is close.
    ///
    /// Case is ignored. A candidate is close when its edit distance to `word` is at most
    /// a third of the longer word (at least 2), or when the two share a prefix of at least
    /// four characters (or all of a shorter `word` of three or more: `dev`, `prod`).
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let w = Array(word.lowercased().unicodeScalars)
        guard !w.isEmpty, w.count <= 64 else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let c = Array(candidate.lowercased().unicodeScalars)
            let distance = editDistance(w, c)
            let prefix = zip(w, c).prefix { $0 == $1 }.count
            let close = distance <= max(2, max(w.count, c.count) / 3)
                || prefix >= 4
                || (w.count >= 3 && prefix == w.count)
            guard close, distance < (best?.distance ?? Int.max) else { continue }
            best = (candidate, distance)
        }
        return best?.candidate
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1,
                                 previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
