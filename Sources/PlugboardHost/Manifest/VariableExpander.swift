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

    /// The string with its references replaced, or the name of the first variable that
    /// is not set and has no default.
    static func expand(_ text: String, variables: [String: String]) throws(Malformed) -> Result<String, Missing> {
        // Fast path: nothing to expand.
        guard text.contains("$") else { return .success(text) }
        var out = ""
        for part in try parts(of: text) {
            switch part {
            case .literal(let l):
                out += l
            case .variable(let name, let fallback):
                if let value = variables[name], !(fallback != nil && value.isEmpty) {
                    out += value
                } else if let fallback {
                    out += fallback
                } else {
                    return .failure(Missing(name: name))
                }
            }
        }
        return .success(out)
    }

    /// A variable that is not set and has no default.
    struct Missing: Error {
        let name: String
    }

    private static func isNameScalar(_ c: Unicode.Scalar, first: Bool) -> Bool {
        c == "_" || c.isASCIILetter || (!first && ("0"..."9").contains(c))
    }
}
