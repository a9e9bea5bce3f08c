import Foundation
import Testing

/// `--log-format`: text lines start with the time; JSON lines are one object each, with
/// time, level, label, message and metadata, read back here by Foundation's parser (not
/// the host's) so the escaping is checked by someone else's rules.
@Suite struct LogFormatTests {
    /// A plugin file that does not exist, its name with non-ASCII letters, a quote, a
    /// backslash and control characters, all of which the log line must carry intact.
    static let oddName = "nowhere/libÜber \"q\" \\ tab\tbell\u{07}.so"

    static func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        let escaped = oddName.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\t", with: "\\t").replacingOccurrences(of: "\u{07}", with: "\\u0007")
        try sandbox.write("plugins.json", ManifestText.make([ManifestText.memory, #"{"name": "Gone", "path": "\#(escaped)"}"#]))
        return sandbox
    }

    /// RFC 3339 in UTC with milliseconds: `2026-12-01T21:16:11.123Z`.
    static func isTimestamp(_ text: Substring) -> Bool {
        let pattern = Array("dddd-dd-ddTdd:dd:dd.dddZ")
        let chars = Array(text)
        return chars.count == pattern.count && zip(chars, pattern).allSatisfy { c, p in p == "d" ? c.isASCII && c.isNumber : c == p }
    }

    @Test func json_isOneObjectPerLine() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        let run = await sandbox.run(["check", "--in-process", "--log-format", "json", "--log-level", "debug"])
        #expect(run.status == 1, "\(run)")
        let lines = Self.logLines(run)
        #expect(lines.count >= 2, "\(run)")
        var found = false
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect(Set(object.keys) == ["time", "level", "label", "message", "metadata"], "\(line)")
            #expect(Self.isTimestamp(Substring(object["time"] as? String ?? "")), "\(line)")
            #expect(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(object["level"] as? String ?? ""))
            #expect(object["label"] as? String == "plugboard")
            #expect(object["metadata"] is [String: Any], "\(line)")
            let everything = "\(object["message"] ?? "") \((object["metadata"] as? [String: Any])?.values.map { "\($0)" } ?? [])"
            if (object["message"] as? String ?? "").contains(Self.oddName) || everything.contains("Über") {
                found = true
                #expect(everything.contains("Über"), "\(line)")
            }
        }
        #expect(found, "no line names the missing plugin file: \(run.stderr)")
        // The file's name arrives whole: quote, backslash, tab and bell decoded as written.
        #expect(lines.contains { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            let texts = [object["message"] as? String ?? ""] + ((object["metadata"] as? [String: Any])?.values.compactMap { $0 as? String } ?? [])
            return texts.contains { $0.contains("libÜber \"q\" \\ tab\tbell\u{07}.so") }
        }, "\(run.stderr)")
    }

    /// Standard error without check's own verdict, which is a message, not a log line.
    static func logLines(_ run: CommandResult) -> [Substring] {
        run.stderr.split(separator: "\n").filter { !$0.hasPrefix("check failed") && !$0.hasPrefix("check passed") }
    }

    @Test func text_linesStartWithTheTime() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        for run in [await sandbox.run(["check", "--in-process", "--log-level", "debug"]),
                    await sandbox.run(["check", "--in-process", "--log-level", "debug", "--log-format", "text"])] {
            let lines = Self.logLines(run)
            #expect(!lines.isEmpty, "\(run)")
            for line in lines {
                let words = line.split(separator: " ", maxSplits: 2)
                #expect(words.count == 3 && Self.isTimestamp(words[0]), "\(line)")
                #expect(["TRACE", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL"].contains(words.count > 1 ? String(words[1]) : ""), "\(line)")
            }
        }
    }

    @Test func variable_choosesTheFormat_andABadNameIsAUsageError() async throws {
        let sandbox = try Self.sandbox()
        defer { sandbox.remove() }
        let run = await sandbox.run(["check", "--in-process", "--log-level", "info"], environment: ["PLUGBOARD_LOG_FORMAT": "json"])
        let lines = Self.logLines(run)
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
        }
        #expect(!lines.isEmpty, "\(run)")
        expectRun(await sandbox.run(["check", "--log-format", "jsn"]), status: 2, stdout: .empty,
                  stderr: .contains("unknown log format \"jsn\"", "Expected one of: text, json.", "Did you mean \"json\"?"))
    }
}
