import PlugboardBytes
/// `${VAR}` and `${VAR:-default}` in configuration strings.
///
/// - `${NAME}` is the variable's value; NAME is a letter or `_`, then letters, digits
///   and `_`. A variable that is set but empty gives the empty string.
/// - `${NAME:-default}` is the value when the variable is set and not empty, else the
///   default: the text up to the next `}`, taken literally (no nested `${...}`).
/// - `$${` is a literal `${`. Any other `$` is kept as it is (`$HOME`, `$5`, `a$$b`).
/// - Anything else after `${`, or a `${` without its `}`, is a malformed reference: an
///   error at load time for every plugin, whether or not it is selected.
///
/// Expansion is single pass: a value containing `${` is not expanded again.
enum VariableExpander {
    /// One piece of a string.
    enum Part: Equatable {
        case literal(String)
        case variable(name: String, fallback: String?)
    }

    /// What is wrong with a reference, as a sentence for a detail (it never quotes the
    /// string, which may be a secret).
    struct Malformed: Error {
        let reason: String
    }

    /// The string's pieces.
    static func parts(of text: String) throws(Malformed) -> [Part] {
        let s = Array(text.unicodeScalars)
        var parts: [Part] = []
        var literal = String.UnicodeScalarView()
        var i = 0
        func flush() {
            if !literal.isEmpty { parts.append(.literal(String(literal))) }
            literal = String.UnicodeScalarView()
        }
        while i < s.count {
            let c = s[i]
            guard c == "$" else {
                literal.append(c)
                i += 1
                continue
            }
            if i + 2 < s.count, s[i + 1] == "$", s[i + 2] == "{" {
                literal.append(contentsOf: "${".unicodeScalars)
                i += 3
                continue
            }
            guard i + 1 < s.count, s[i + 1] == "{" else {
                literal.append(c)
                i += 1
                continue
            }
            // A reference: ${NAME} or ${NAME:-default}.
            var j = i + 2
            var name = String.UnicodeScalarView()
            while j < s.count, isNameScalar(s[j], first: name.isEmpty) {
                name.append(s[j])
                j += 1
            }
            guard !name.isEmpty else {
                throw Malformed(reason: "A \"${\" must be followed by a variable name (a letter or \"_\", then letters, digits and \"_\").")
            }
            guard j < s.count else {
                throw Malformed(reason: "A \"${\" is not closed by \"}\".")
            }
            var fallback: String?
            if s[j] == ":" {
                guard j + 1 < s.count, s[j + 1] == "-" else {
                    throw Malformed(reason: "After a variable's name comes \"}\" or \":-\" and a default.")
                }
                j += 2
                var text = String.UnicodeScalarView()
                while j < s.count, s[j] != "}" {
                    text.append(s[j])
                    j += 1
                }
                fallback = String(text)
            }
            guard j < s.count, s[j] == "}" else {
                throw Malformed(reason: j < s.count
                    ? "After a variable's name comes \"}\" or \":-\" and a default."
                    : "A \"${\" is not closed by \"}\".")
            }
            flush()
            parts.append(.variable(name: String(name), fallback: fallback))
            i = j + 1
        }
        flush()
        return parts
    }

    /// How much configuration text expansion may produce, shared by every string of a
    /// manifest. A 1 MiB manifest can name a large variable tens of thousands of times,
    /// so without a bound one `${A}` repeated becomes gigabytes and the host aborts.
    struct Budget {
        /// 16 MiB: far beyond any real configuration, small enough to allocate at once.
        static let manifestLimit = 16 << 20
        let limit: Int
        private(set) var used = 0

        init(limit: Int = Budget.manifestLimit) { self.limit = limit }

        /// Takes `count` bytes, or leaves the budget as it is and returns false.
        mutating func take(_ count: Int) -> Bool {
            let (total, overflow) = used.addingReportingOverflow(count)
            guard !overflow, total <= limit else { return false }
            used = total
            return true
        }
    }

    /// Why a string could not be expanded.
    enum Refusal: Error {
        /// A variable that is not set and has no default.
        case missing(name: String)
        /// The expansion would take `needed` bytes; `available` were left of the budget.
        case tooLarge(needed: Int, available: Int)
    }

    /// The string with its references replaced, or why it cannot be: the first variable
    /// that is not set and has no default, or an expansion larger than what is left of
    /// `budget`. The size is summed from the pieces before anything is appended, so a
    /// refused expansion allocates nothing.
    static func expand(_ text: String, variables: [String: String],
                       budget: inout Budget) throws(Malformed) -> Result<String, Refusal> {
        // Fast path: nothing to expand.
        guard text.contains("$") else {
            return budget.take(text.utf8.count) ? .success(text)
                : .failure(.tooLarge(needed: text.utf8.count, available: budget.limit - budget.used))
        }
        var pieces: [String] = []
        var size = 0
        for part in try parts(of: text) {
            let piece: String
            switch part {
            case .literal(let l):
                piece = l
            case .variable(let name, let fallback):
                if let value = variables[name], !(fallback != nil && value.isEmpty) {
                    piece = value
                } else if let fallback {
                    piece = fallback
                } else {
                    return .failure(.missing(name: name))
                }
            }
            // Saturates rather than overflows: anything near Int.max is refused anyway.
            size = size.addingReportingOverflow(piece.utf8.count).overflow ? Int.max : size + piece.utf8.count
            pieces.append(piece)
        }
        guard budget.take(size) else {
            return .failure(.tooLarge(needed: size, available: budget.limit - budget.used))
        }
        var out = ""
        out.reserveCapacity(size)
        for piece in pieces { out += piece }
        return .success(out)
    }

    private static func isNameScalar(_ c: Unicode.Scalar, first: Bool) -> Bool {
        c == "_" || c.isASCIILetter || (!first && ("0"..."9").contains(c))
    }
}
