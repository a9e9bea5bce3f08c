#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport

/// A `plugboard serve` child process on a free loopback port, in its own sandbox with
/// its own manifest; the port comes from the start-up line on standard output. Standard
/// error goes to `stderr.txt` in the sandbox.
final class ServerProcess: @unchecked Sendable {
    // @unchecked Sendable: every field is set once in init; the child is only signalled.
    let sandbox: Sandbox
    let pid: pid_t
    let port: Int
    let startLine: String
    /// The lines after the first that init was asked to wait for (`laterLines`).
    let laterLines: [String]
    private var exited = false

    static let memory = ManifestText.memory
    static func memory(latencyMilliseconds: Int) -> String {
        #"{"name": "Mem", "product": "MemoryStorage", "config": {"latencyMilliseconds": \#(latencyMilliseconds)}}"#
    }

    /// Starts `plugboard serve --listen 127.0.0.1:0` plus `arguments`, with `plugins.json`
    /// holding `plugins` (or the whole `manifest` text) and `environment` added to the
    /// test's own; with `laterLines`, the lines after the first are waited for too (the
    /// S3 endpoint's line of `--s3-listen`).
    init(plugins: [String] = [ServerProcess.memory], manifest: String? = nil, arguments: [String] = [],
         environment: [String: String] = [:], laterLines: Int = 0) throws {
        sandbox = try Sandbox("plugboard-serve")
        try sandbox.write("plugins.json", manifest ?? ManifestText.make(plugins))
        let (pid, out) = try Self.spawn(["serve", "--listen", "127.0.0.1:0"] + arguments, sandbox: sandbox,
                                        environment: environment)
        self.pid = pid
        let line = ChildOutput.firstLine(out, timeoutMilliseconds: 60_000)
        var later: [String] = []
        while line != nil && later.count < laterLines,
              let next = ChildOutput.firstLine(out, timeoutMilliseconds: 10_000) {
            later.append(next)
        }
        close(out)
        // The text line, or with --json the object {"listening":"http://127.0.0.1:PORT"}.
        guard let line, line.hasPrefix("plugboard serve: listening on http://127.0.0.1:")
                || line.hasPrefix("{\"listening\":\"http://127.0.0.1:"),
              let port = Int(line.split(separator: ":").last?.filter(\.isNumber) ?? "") else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            let log = (try? sandbox.read("stderr.txt")).map { String(decoding: $0, as: UTF8.self) } ?? ""
            sandbox.remove()
            throw FixtureError("serve did not start; stdout \(line ?? "(nothing)"); stderr:\n\(log)")
        }
        self.port = port
        self.startLine = line
        self.laterLines = later
    }

    deinit {
        if !exited {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        sandbox.remove()
    }

    var stderr: String { (try? sandbox.read("stderr.txt")).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// Waits (up to `timeoutMilliseconds`) until standard error holds `text`, as a line the
    /// server logs when something happened; whether it came. The file is read again every
    /// 20 ms: the log is a file, which has no event to wait on.
    func waitForStderr(containing text: String, times: Int = 1, timeoutMilliseconds: Int64 = 60_000) -> Bool {
        let deadline = CommandRunner.monotonicMilliseconds() + timeoutMilliseconds
        while stderrLines(containing: text) < times {
            guard CommandRunner.monotonicMilliseconds() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }

    /// How many lines of standard error hold `text`.
    func stderrLines(containing text: String) -> Int {
        stderr.split(separator: "\n").filter { $0.contains(text) }.count
    }

    func client() throws -> RawClient { try RawClient(port: port) }

    /// Sends `signal` and waits for the exit status (128+N for a signal death).
    func stop(_ signal: Int32 = SIGTERM, timeoutMilliseconds: Int64 = 20_000) -> Int32? {
        kill(pid, signal)
        return waitForExit(timeoutMilliseconds: timeoutMilliseconds)
    }

    func waitForExit(timeoutMilliseconds: Int64) -> Int32? {
        let deadline = CommandRunner.monotonicMilliseconds() + timeoutMilliseconds
        while CommandRunner.monotonicMilliseconds() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                exited = true
                return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            }
            usleep(20_000)
        }
        return nil
    }

    /// Starts the executable in the sandbox, standard output on a pipe (returned),
    /// standard error appended to `stderr.txt`, with the sandbox's manifest and cache.
    /// CommandRunner waits for its children; a server has to be read while it runs.
    private static func spawn(_ arguments: [String], sandbox: Sandbox,
                              environment: [String: String]) throws -> (pid_t, Int32) {
        var env = CommandRunner.processEnvironment.filter {
            !CommandRunner.controlledVariables.contains($0.key) && !$0.key.hasSuffix("_TOKEN")
        }
        env["SWIFT_BACKTRACE"] = "enable=no"
        env["HOME"] = sandbox.home
        for (k, v) in environment { env[k] = v }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw FixtureError("pipe failed") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, sandbox.path("stderr.txt"), O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let executable = CommandRunner.executable
        // A fleet host takes its manifest from etcd, and refuses --manifest.
        let manifest = arguments.contains("--fleet") ? [] : ["--manifest", sandbox.path("plugins.json")]
        let argv = ([executable] + arguments + manifest + ["--cache-dir", sandbox.cacheDirectory])
            .map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw FixtureError("posix_spawn \(executable): \(String(cString: strerror(rc)))")
        }
        return (pid, fds[0])
    }
}
