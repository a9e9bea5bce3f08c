#if canImport(Glibc)
import Glibc
#endif
import PlugboardBytes

/// A Python virtual environment made on first use: `.venv` in `root`, holding what a pip
/// requirements file lists, so that `swift test` needs no set-up line before it.
///
/// ``prepare()`` reuses a complete `.venv` at once (its copy of the requirements file
/// matches), and otherwise makes it under an exclusive `flock` on `root/.venv.lock`, which
/// several test processes, and parallel tests in one, may ask for at the same time: the
/// first makes it, the others wait and then find it made. Before installing it prints one
/// line saying what it installs and why. Where it cannot be made for a reason of the
/// machine's (no `python3`, no venv module, PyPI unreachable), the outcome is a skip with
/// that reason; any other failure (pip refusing a requirement, a folder it cannot write) is
/// a failure, so that it is fixed rather than hidden.
///
/// The tests use ``PythonTools``, this type over the package's own `.venv`; tests of this
/// type point it at fake interpreters in a folder of their own.
public struct PythonVenv: Sendable {
    /// What ``prepare()`` found.
    public enum Outcome: Sendable, Equatable {
        /// `.venv` holds everything the requirements file lists.
        case ready
        /// The machine cannot have it now; the reason says what is missing and how to add it.
        case skipped(String)
        /// Making it failed for a reason that must be fixed; the text says what failed.
        case failed(String)
    }

    /// The folder holding `.venv` and its lock (the package's root).
    public let root: String
    /// The pip requirements file to install (`-r`), with a `# why` after each package.
    public let requirements: String
    /// The interpreter that makes the venv: `python3` on the PATH, or nil when there is none.
    public let python3: String?
    /// The environment of the children (`python3 -m venv`, pip).
    public let environment: [String: String]
    /// Where the lines saying what is made and why go: standard error, where `swift test`
    /// shows them.
    public let report: @Sendable (String) -> Void

    public init(root: String, requirements: String, python3: String?, environment: [String: String],
                report: @escaping @Sendable (String) -> Void = { try? DescriptorIO.writeAll(2, Array("PythonVenv: \($0)\n".utf8)) }) {
        self.root = root
        self.requirements = requirements
        self.python3 = python3
        self.environment = environment
        self.report = report
    }

    /// The venv's folder.
    public var folder: String { "\(root)/.venv" }
    /// The venv's interpreter, with what the requirements file lists importable.
    public var python: String { bin("python") }
    /// An executable the venv installed (`moto_server`).
    public func bin(_ name: String) -> String { "\(folder)/bin/\(name)" }

    /// The copy of the requirements file written once they are installed: a `.venv` whose
    /// copy matches the file is complete. One made by hand or by .ci/run has none, and
    /// pip then finds every requirement already satisfied (offline too) before it is written.
    var installedRecord: String { "\(folder)/plugboard-installed-requirements.txt" }

    /// Makes `.venv` if it is not complete; blocks for as long as that takes (a minute or
    /// more for a first install), so callers on Swift's cooperative pool run it on a
    /// thread of their own (``PythonTools/prepare()`` does).
    public func prepare() -> Outcome {
        guard let wanted = Self.read(requirements) else {
            return .failed("cannot read the Python requirements file \(requirements): \(String(cString: strerror(errno)))")
        }
        if Self.read(installedRecord) == wanted { return .ready }

        let lockPath = "\(root)/.venv.lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { return .failed("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        if flock(lock, LOCK_EX | LOCK_NB) != 0 {
            say("another process is making \(folder); waiting for it (lock \(lockPath))")
            while flock(lock, LOCK_EX) != 0 {
                guard errno == EINTR else { return .failed("cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
            }
        }
        // Unlocked when `lock` is closed.
        if Self.read(installedRecord) == wanted { return .ready }

        if access(python, X_OK) != 0 {
            guard let python3 else {
                return .skipped("python3 is not installed: the tests that run moto_server and boto3 make \(folder) with it (apt-get install python3 python3-venv)")
            }
            let probe = run(python3, ["-c", "import venv, ensurepip"])
            guard probe.status == 0 else {
                return .skipped("Python's venv module is missing (\(python3) -c 'import venv, ensurepip' failed: \(Self.lastLine(probe.output))): the tests that run moto_server and boto3 make \(folder) with it (apt-get install python3-venv)")
            }
            say("making \(folder) with \(python3) -m venv, once; later runs reuse it")
            let made = run(python3, ["-m", "venv", folder])
            guard made.status == 0, access(python, X_OK) == 0 else {
                return .failed("\(python3) -m venv \(folder) failed (status \(made.status)): \(Self.tail(made.output))")
            }
        }

        say("installing into \(folder) from PyPI, once (\(requirements)): " + Self.describe(wanted))
        let installed = run(python, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", requirements])
        guard installed.status == 0 else {
            if Self.isUnreachable(installed.output) {
                return .skipped("PyPI is unreachable: pip could not connect (\(Self.lastLine(Self.connectionLine(installed.output)))); the tests that run moto_server and boto3 run once \(python) -m pip install -r \(requirements) can reach it")
            }
            return .failed("\(python) -m pip install -r \(requirements) failed (status \(installed.status)): \(Self.tail(installed.output))")
        }
        guard Self.write(wanted, to: installedRecord) else {
            return .failed("cannot write \(installedRecord): \(String(cString: strerror(errno)))")
        }
        say("\(folder) is ready")
        return .ready
    }

    /// Whether pip's output says it could not reach the package index at all (rather than
    /// reaching it and refusing a requirement, which is a failure).
    public static func isUnreachable(_ output: String) -> Bool {
        !connectionLine(output).isEmpty
    }

    /// The first line of pip's output that reports a connection that failed.
    static func connectionLine(_ output: String) -> String {
        let signs = ["connection broken by", "Failed to establish a new connection", "Could not fetch URL",
                     "Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
                     "ProxyError", "ConnectTimeoutError", "Read timed out"]
        return output.split(separator: "\n").first { line in signs.contains { line.contains($0) } }.map(String.init) ?? ""
    }

    /// "name (why), name (why)" from a requirements file's lines.
    static func describe(_ requirements: String) -> String {
        var parts: [String] = []
        for line in requirements.split(separator: "\n") {
            let text = ASCIIText.trimmed(line)
            guard !text.isEmpty, !text.hasPrefix("#") else { continue }
            let pieces = text.split(separator: "#", maxSplits: 1)
            let name = ASCIIText.trimmed(pieces[0])
            let why = pieces.count > 1 ? ASCIIText.trimmed(pieces[1]) : ""
            parts.append(why.isEmpty ? String(name) : "\(name) (\(why))")
        }
        return parts.joined(separator: ", ")
    }

    /// Runs `program` with `arguments` and waits for it; its standard output and error together.
    private func run(_ program: String, _ arguments: [String]) -> (status: Int32, output: String) {
        var template = Array("/tmp/plugboard-venv-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return (-1, "cannot create a file under /tmp: \(String(cString: strerror(errno)))") }
        // Not inherited by what other tests spawn meanwhile (Glibc's overlay has no mkostemp).
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { close(fd); unlink(path) }
        let pid: pid_t
        do throws(ChildProcessError) {
            pid = try ChildProcess.spawn(program, arguments, environment: environment, stdout: .descriptor(fd), stderr: .descriptor(fd))
        } catch {
            return (-1, error.description)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        lseek(fd, 0, SEEK_SET)
        let output = String(decoding: (try? DescriptorIO.readToEnd(fd, limit: 1 << 20)) ?? [], as: UTF8.self)
        // WIFEXITED and WEXITSTATUS are macros Swift does not import.
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output)
    }

    private func say(_ text: String) { report(text) }

    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return (try? DescriptorIO.readToEnd(fd)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes `text` to a new file and renames it onto `path`, so that a reader sees the
    /// old file or the whole new one.
    static func write(_ text: String, to path: String) -> Bool {
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        let written = (try? DescriptorIO.writeAll(fd, Array(text.utf8))) != nil
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    static func lastLine(_ output: String) -> String {
        output.split(separator: "\n").last.map { String(ASCIIText.trimmed($0)) } ?? "no output"
    }

    static func tail(_ output: String) -> String {
        String(output.split(separator: "\n").suffix(15).joined(separator: "\n").suffix(3000))
    }
}
