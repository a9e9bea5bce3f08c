import Foundation
import PlugboardConcurrency
import PlugboardTestSupport
import Testing

/// PythonVenv, which makes the tests' `.venv` on first use: with fake interpreters (shell
/// scripts that log their arguments) for what it runs and when, and with the real python3
/// against a package index nobody answers on.
@Suite struct PythonVenvTests {
    /// A folder with a requirements file, a log the fake interpreters append to, and the
    /// lines the venv reported.
    final class Sandbox: Sendable {
        let root: String
        let reported = LockedValueBox<[String]>([])

        init() throws {
            root = BuildProducts.temporaryFolder("python-venv-tests")
            try "moto[server]  # the server\nboto3  # the client\n".write(toFile: "\(root)/requirements.txt", atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        var log: [String] {
            ((try? String(contentsOfFile: "\(root)/log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// A shell script at `path` that logs its arguments, then runs `body`. Written
        /// through a close-on-exec descriptor: a child another test spawns meanwhile must
        /// not keep it open for writing, or running the script fails with ETXTBSY.
        func script(_ path: String, _ body: String) throws {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
            guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
            defer { close(fd) }
            let text = Array("#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \(root)/log\n\(body)\n".utf8)
            guard text.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == text.count else { throw CocoaError(.fileWriteUnknown) }
        }

        /// A fake python3 whose `-m venv DIR` makes DIR/bin/python, a fake pip that runs
        /// `pip` (shell) and succeeds.
        func python3(pip: String = "") throws -> String {
            try script("\(root)/pip", pip)
            try script("\(root)/python3", """
            case "$1" in
            -c) exit 0 ;;
            -m) mkdir -p "$3/bin" && cp \(root)/pip "$3/bin/python" ;;
            esac
            """)
            return "\(root)/python3"
        }

        func venv(python3: String?, environment: [String: String] = [:]) -> PythonVenv {
            PythonVenv(root: root, requirements: "\(root)/requirements.txt", python3: python3, environment: environment,
                       report: { [reported] line in reported.withLock { $0.append(line) } })
        }
    }

    @Test func aFirstRun_makesTheVenv_installsTheRequirements_andSaysWhatAndWhy() async throws {
        let sandbox = try Sandbox()
        let outcome = await BlockingWork.run { sandbox.venv(python3: try? sandbox.python3()).prepare() }
        #expect(outcome == .ready)
        #expect(sandbox.log == ["python3 -c import venv, ensurepip", "python3 -m venv \(sandbox.root)/.venv",
                                "python -m pip install -q --disable-pip-version-check -r \(sandbox.root)/requirements.txt"])
        let said = sandbox.reported.withLock { $0 }.joined(separator: "\n")
        #expect(said.contains("moto[server] (the server), boto3 (the client)"), "\(said)")
    }

    @Test func aCompleteVenv_isReused_withoutRunningPython() async throws {
        let sandbox = try Sandbox()
        let python3 = try sandbox.python3()
        #expect(await BlockingWork.run { sandbox.venv(python3: python3).prepare() } == .ready)
        try FileManager.default.removeItem(atPath: "\(sandbox.root)/log")
        #expect(await BlockingWork.run { sandbox.venv(python3: python3).prepare() } == .ready)
        #expect(sandbox.log.isEmpty)
    }

    /// A `.venv` made by hand or by .ci/run: pip is asked (and finds the requirements
    /// satisfied); the venv is not made again.
    @Test func aVenvMadeElsewhere_isCompletedByPip_notMadeAgain() async throws {
        let sandbox = try Sandbox()
        try sandbox.script("\(sandbox.root)/.venv/bin/python", "")
        #expect(await BlockingWork.run { sandbox.venv(python3: try? sandbox.python3()).prepare() } == .ready)
        #expect(sandbox.log == ["python -m pip install -q --disable-pip-version-check -r \(sandbox.root)/requirements.txt"])
    }

    @Test func aMissingVenvModule_skipsWithTheReason() async throws {
        let sandbox = try Sandbox()
        try sandbox.script("\(sandbox.root)/python3", "echo \"ModuleNotFoundError: No module named 'ensurepip'\" >&2; exit 1")
        let outcome = await BlockingWork.run { sandbox.venv(python3: "\(sandbox.root)/python3").prepare() }
        guard case .skipped(let reason) = outcome else { Issue.record("expected a skip, found \(outcome)"); return }
        #expect(reason.contains("venv module is missing") && reason.contains("No module named 'ensurepip'")
                && reason.contains("apt-get install python3-venv"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: "\(sandbox.root)/.venv"))
    }

    @Test func noPython3_skipsWithTheReason() async throws {
        let sandbox = try Sandbox()
        let outcome = await BlockingWork.run { sandbox.venv(python3: nil).prepare() }
        guard case .skipped(let reason) = outcome else { Issue.record("expected a skip, found \(outcome)"); return }
        #expect(reason.contains("python3 is not installed") && reason.contains("apt-get install python3 python3-venv"), "\(reason)")
    }

    /// Two callers at once (as two test processes are): the second waits on the lock
    /// while the first installs, then finds the venv complete; pip runs once.
    @Test func twoCallersAtOnce_installOnce() async throws {
        let sandbox = try Sandbox()
        let bound = ContinuousClock.now + .seconds(120)
        // The fake pip holds the first caller in its install until the test creates `release`.
        let python3 = try sandbox.python3(pip: "while [ ! -e \(sandbox.root)/release ]; do sleep 0.05; done")
        // Each caller on a thread of its own: a blocking lane of a busy test process may be
        // taken by another suite for longer than the bound.
        let first = OwnThread.start { sandbox.venv(python3: python3).prepare() }
        while !sandbox.log.contains(where: { $0.hasPrefix("python -m pip") }) {
            guard ContinuousClock.now < bound else { Issue.record("the first caller never reached pip: \(sandbox.log)"); return }
            try await Task.sleep(for: .milliseconds(20))
        }
        let second = OwnThread.start { sandbox.venv(python3: python3).prepare() }
        while !sandbox.reported.withLock({ $0.contains { $0.contains("another process is making") } }) {
            guard ContinuousClock.now < bound else { Issue.record("the second caller did not wait for the first: \(sandbox.log)"); break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(FileManager.default.createFile(atPath: "\(sandbox.root)/release", contents: nil))
        #expect(await first.value == .ready)
        #expect(await second.value == .ready)
        #expect(sandbox.log.filter { $0.hasPrefix("python -m pip") }.count == 1, "\(sandbox.log)")
    }

    /// The real python3 and pip, against an index on a port nobody listens on.
    @Test(.enabled(if: PythonTools.onPath("python3") != nil, "python3 is not installed"))
    func anUnreachableIndex_skipsWithTheReason() async throws {
        let sandbox = try Sandbox()
        let port = try #require(LoopbackSocket.freePort())
        var environment = ChildProcess.environment.filter { !$0.key.hasPrefix("PIP_") }
        environment["PIP_CONFIG_FILE"] = "/dev/null"
        environment["PIP_INDEX_URL"] = "http://127.0.0.1:\(port)/simple"
        environment["PIP_RETRIES"] = "1"   // one retry: pip says why it retries, which is how it tells unreachable
        let venv = sandbox.venv(python3: PythonTools.onPath("python3"), environment: environment)
        let outcome = await BlockingWork.run { venv.prepare() }
        if case .skipped(let reason) = outcome, reason.contains("venv module is missing") { return }
        guard case .skipped(let reason) = outcome else { Issue.record("expected a skip, found \(outcome)"); return }
        #expect(reason.contains("PyPI is unreachable") && reason.contains("Connection refused"), "\(reason)")
    }

    /// A requirement the index does not have is a failure, not a skip.
    @Test func pipRefusingARequirement_isNotUnreachable() {
        #expect(!PythonVenv.isUnreachable("""
        ERROR: Could not find a version that satisfies the requirement no-such-package (from versions: none)
        ERROR: No matching distribution found for no-such-package
        """))
        #expect(PythonVenv.isUnreachable("""
        WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<HTTPConnection object>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/moto/
        ERROR: Could not find a version that satisfies the requirement moto[server] (from versions: none)
        """))
    }
}
