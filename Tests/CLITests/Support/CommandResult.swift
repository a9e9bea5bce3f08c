/// What one run of the `plugboard` executable produced.
struct CommandResult: Sendable, CustomStringConvertible {
    /// The words after the executable's name.
    let arguments: [String]
    /// The exit status, or 128 + the signal number if the process was killed.
    let status: Int32
    let stdoutBytes: [UInt8]
    let stderrBytes: [UInt8]
    /// The run took longer than its timeout and was killed.
    let timedOut: Bool

    var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
    var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }

    /// Every byte the run wrote, both streams, for "never printed" checks.
    var allOutput: String { stdout + "\n" + stderr }

    /// The command line and both streams, for failure messages.
    var description: String {
        """
        $ plugboard \(arguments.map(Self.shellQuote).joined(separator: " "))
        exit status: \(status)\(timedOut ? " (timed out)" : "")
        --- stdout ---
        \(stdout)
        --- stderr ---
        \(stderr)
        --------------
        """
    }

    static func shellQuote(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:@%+,".contains($0) }
        return plain && !word.isEmpty ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false)
            .joined(separator: "'\\''") + "'"
    }
}
