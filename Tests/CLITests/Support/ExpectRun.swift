import Testing

/// What one output stream should hold.
enum StreamExpectation: Sendable {
    /// Anything.
    case any
    /// Nothing at all.
    case empty
    /// Exactly this text, word for word.
    case exactly(String)
    /// Each of these pieces, anywhere.
    case contains([String])
    /// Each of these pieces, and none of those.
    case containsNot([String], not: [String])

    static func contains(_ pieces: String...) -> Self { .contains(pieces) }

    /// Why `text` does not match, or nil.
    func mismatch(_ text: String, stream: String) -> String? {
        switch self {
        case .any:
            return nil
        case .empty:
            return text.isEmpty ? nil : "\(stream) should be empty"
        case .exactly(let expected):
            guard text != expected else { return nil }
            return "\(stream) differs from the expected text:\n\(firstDifference(expected, text))"
        case .contains(let pieces):
            let missing = pieces.filter { !text.contains($0) }
            return missing.isEmpty ? nil : "\(stream) lacks \(missing.map { "\"\($0)\"" }.joined(separator: ", "))"
        case .containsNot(let pieces, let forbidden):
            let missing = pieces.filter { !text.contains($0) }
            let present = forbidden.filter { text.contains($0) }
            if missing.isEmpty && present.isEmpty { return nil }
            return "\(stream) lacks \(missing) / holds \(present)"
        }
    }

    private func firstDifference(_ expected: String, _ actual: String) -> String {
        let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let a = actual.split(separator: "\n", omittingEmptySubsequences: false)
        for i in 0..<max(e.count, a.count) {
            let el = i < e.count ? String(e[i]) : "<end>"
            let al = i < a.count ? String(a[i]) : "<end>"
            if el != al { return "line \(i + 1):\n  expected: \(el)\n  actual:   \(al)" }
        }
        return "(same lines)"
    }
}

/// Checks the exit status and both streams of a run together, as swift-argument-parser's
/// `AssertExecuteCommand` does, and reports every mismatch at once with the whole run.
@discardableResult
func expectRun(_ result: CommandResult, status: Int32, stdout: StreamExpectation = .any,
               stderr: StreamExpectation = .any,
               sourceLocation: Testing.SourceLocation = #_sourceLocation) -> Bool {
    var problems: [String] = []
    if result.timedOut { problems.append("the run timed out") }
    if result.status != status { problems.append("exit status \(result.status), expected \(status)") }
    if let m = stdout.mismatch(result.stdout, stream: "stdout") { problems.append(m) }
    if let m = stderr.mismatch(result.stderr, stream: "stderr") { problems.append(m) }
    guard !problems.isEmpty else { return true }
    Issue.record("\(problems.joined(separator: "\n"))\n\(result)", sourceLocation: sourceLocation)
    return false
}
