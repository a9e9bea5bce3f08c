#if canImport(Glibc)
import Glibc
#endif

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A `plugboard serve` child process on a free loopback port, in a fresh temporary
/// folder with its own manifest; the port comes from the start-up line on standard output.
final class ServerProcess: @unchecked Sendable {
    // @unchecked Sendable: every field is set once in init; the child is only signalled.
    let folder: String
    let pid: pid_t
    let port: Int
    let startLine: String
    private var exited: Int32?

    /// The folder with the package's build products: the test runner's, or above the
    /// `.xctest` bundle it sits in.
    static let products: String = {
        var folder = parent(realPath("/proc/self/exe") ?? ".")
        while folder.contains(".xctest") { folder = parent(folder) }
        return folder
    }()

    /// Manifest plugin objects.
    static let memory = #"{"name": "Mem", "product": "MemoryStorage"}"#
    static func memory(latencyMilliseconds: Int) -> String {
        #"{"name": "Mem", "product": "MemoryStorage", "config": {"latencyMilliseconds": \#(latencyMilliseconds)}}"#
    }

    /// Starts `plugboard serve --listen 127.0.0.1:0` plus `arguments`, with a manifest
    /// holding `plugins` (JSON objects) and `environment` added to the test's own.
    init(plugins: [String] = [ServerProcess.memory], arguments: [String] = [], environment: [String: String] = [:],
         rawManifest: String? = nil) throws {
        folder = try Self.makeFolder()
        let manifest = rawManifest ?? "{\"schemaVersion\": 1, \"plugins\": [\(plugins.joined(separator: ", "))]}\n"
        try Self.write("\(folder)/plugins.json", manifest)
        let (pid, out) = try Self.spawn(["serve", "--listen", "127.0.0.1:0"] + arguments, folder: folder,
                                        environment: environment)
        self.pid = pid
        let line = Self.readLine(out, timeoutSeconds: 60)
        close(out)
        guard let line, line.hasPrefix("plugboard serve: listening on http://127.0.0.1:"),
              let port = Int(line.split(separator: ":").last ?? "") else {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw TestFailure("serve did not start; stdout \(line ?? "(nothing)"); stderr:\n\(Self.readFile("\(folder)/stderr.txt"))")
        }
        self.port = port
        self.startLine = line
    }

    deinit {
        if exited == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        _ = try? Self.run(["/bin/rm", "-rf", folder])
    }

    var stderr: String { Self.readFile("\(folder)/stderr.txt") }

    func client() throws -> RawClient { try RawClient(port: port) }

    /// Sends `signal` and waits for the exit status (128+N for a signal death), at most
    /// `timeoutSeconds`.
    func stop(_ signal: Int32 = SIGTERM, timeoutSeconds: Double = 20) -> Int32? {
        kill(pid, signal)
        return waitForExit(timeoutSeconds: timeoutSeconds)
    }

    func waitForExit(timeoutSeconds: Double) -> Int32? {
        let deadline = now() + timeoutSeconds
        while now() < deadline {
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
                exited = code
                return code
            }
            usleep(20_000)
        }
        return nil
    }

    // MARK: - Process plumbing

    /// Runs `plugboard arguments` in `folder` to completion: status and standard output.
    static func runCLI(_ arguments: [String], folder: String, environment: [String: String] = [:]) throws -> (Int32, String) {
        let (pid, out) = try spawn(arguments, folder: folder, environment: environment)
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(out, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            text += buffer[0..<n]
        }
        close(out)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return ((status >> 8) & 0xFF, String(decoding: text, as: UTF8.self))
    }

    /// Starts the executable with standard output on a pipe (returned) and standard error
    /// in `folder/stderr.txt`, in `folder`, with `--cache-dir` inside it.
    private static func spawn(_ arguments: [String], folder: String, environment: [String: String]) throws -> (pid_t, Int32) {
        var env = processEnvironment.filter { !["PLUGBOARD_MANIFEST", "PLUGBOARD_ENV", "PLUGBOARD_PLUGIN_PATH",
                                                 "PLUGBOARD_API_TOKEN", "PLUGBOARD_ADMIN_TOKEN"].contains($0.key) }
        env["SWIFT_BACKTRACE"] = "enable=no"
        env["HOME"] = folder
        for (k, v) in environment { env[k] = v }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw TestFailure("pipe failed") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "\(folder)/stderr.txt", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let executable = "\(products)/plugboard"
        let argv = ([executable] + arguments + ["--manifest", "\(folder)/plugins.json", "--cache-dir", "\(folder)/cache"])
            .map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw TestFailure("posix_spawn \(executable): \(String(cString: strerror(rc)))")
        }
        return (pid, fds[0])
    }

    private static func readLine(_ fd: Int32, timeoutSeconds: Double) -> String? {
        var line: [UInt8] = []
        let deadline = now() + timeoutSeconds
        while now() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) >= 0 || errno == EINTR else { return nil }
            guard p.revents != 0 else { continue }
            var byte: UInt8 = 0
            let n = read(fd, &byte, 1)
            if n <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 10 { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    @discardableResult
    static func run(_ argv: [String]) throws -> Int32 {
        var pid: pid_t = 0
        let args = argv.map { strdup($0) } + [nil]
        defer { for p in args { free(p) } }
        guard posix_spawn(&pid, argv[0], nil, nil, args, environ) == 0 else { throw TestFailure("spawn \(argv[0])") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return status
    }

    static func makeFolder() throws -> String {
        var template = Array("/tmp/plugboard-serve-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buf -> String? in
            guard let base = buf.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        guard let made else { throw TestFailure("mkdtemp failed") }
        chmod(made, 0o755)
        return made
    }

    static func write(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestFailure("could not create \(path)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw TestFailure("could not write \(path)")
        }
    }

    static func readFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return String(decoding: out, as: UTF8.self) }
            out += chunk[0..<n]
        }
    }

    static let processEnvironment: [String: String] = {
        var out: [String: String] = [:]
        var entry = environ
        while let p = entry.pointee {
            let pair = String(cString: p)
            if let eq = pair.firstIndex(of: "=") { out[String(pair[..<eq])] = String(pair[pair.index(after: eq)...]) }
            entry += 1
        }
        return out
    }()

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
