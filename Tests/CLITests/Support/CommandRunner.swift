#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport

/// Runs the built `plugboard` executable with `posix_spawn`, feeding standard input and
/// capturing standard output, standard error and the exit status.
enum CommandRunner {
    /// The folder with the package's build products (`.build/<triple>/debug`): the test
    /// runner's folder, or the folder above the `.xctest` bundle it sits in.
    static var productsFolder: String { BuildProducts.folder }

    /// The `plugboard` executable beside the test runner.
    static var executable: String { "\(productsFolder)/plugboard" }

    /// How long one run may take before it is killed: a bound that only says "this hung".
    /// A debug build loads plugins in well under a second, but with the suite's package
    /// builds and etcd cluster beside it on two cores, runs of StorageTests took over 30 s.
    static let timeoutMilliseconds: Int32 = 120_000

    /// Variables that would change what `plugboard` does; a run starts without them and
    /// gets only those the test gives.
    static let controlledVariables: Set<String> = [
        "PLUGBOARD_MANIFEST", "PLUGBOARD_ENV", "PLUGBOARD_PLUGIN_PATH", "XDG_CACHE_HOME", "PLUGBOARD_LOG_FORMAT",
        // A test runner started by systemd must not have its servers speak to systemd.
        "NOTIFY_SOCKET",
    ]

    /// Runs `plugboard arguments` in `directory` and waits for it, on a thread of its own
    /// (see ``spawn(_:_:in:stdin:environment:)``).
    ///
    /// - Parameters:
    ///   - stdin: what the child reads on standard input (an empty pipe by default).
    ///   - environment: variables set on top of the test process's environment (without
    ///     ``controlledVariables``); `HOME` should point into the sandbox.
    static func run(_ arguments: [String], in directory: String, stdin: [UInt8] = [],
                    environment: [String: String]) async -> CommandResult {
        await spawn(executable, arguments, in: directory, stdin: stdin, environment: environment)
    }

    /// Runs any program the same way (the completion tests' shells, a copied executable).
    ///
    /// Waited for on a thread of its own: the cooperative pool has two threads on a 2-core
    /// machine, and one of them blocked in `poll` or `waitpid` made every other test's
    /// timers and continuations resume tens of seconds late.
    static func spawn(_ executable: String, _ arguments: [String], in directory: String, stdin: [UInt8] = [],
                      environment: [String: String]) async -> CommandResult {
        await children.run {
            await OwnThread.run { spawnBlocking(executable, arguments, in: directory, stdin: stdin, environment: environment) }
        }
    }

    /// ``spawn(_:_:in:stdin:environment:)`` on the calling thread, for the few callers that
    /// cannot await: the fixture built in a `static let` initializer and ``Sandbox/remove()``,
    /// which runs in `defer` blocks, a `deinit` and `atexit`.
    static func spawnBlocking(_ executable: String, _ arguments: [String], in directory: String, stdin: [UInt8] = [],
                              environment: [String: String]) -> CommandResult {
        _ = ignoreSIGPIPE
        var env = processEnvironment.filter { !controlledVariables.contains($0.key) }
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (k, v) in environment { env[k] = v }

        guard let addChdir else {
            return failed(arguments, "posix_spawn_file_actions_addchdir_np is not available (glibc 2.29 or later)")
        }
        var inPipe: [Int32] = [-1, -1], outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        // Pipes are made and the child spawned under one lock, so that a run started in
        // parallel never inherits this run's pipes before they are marked close-on-exec.
        spawnLock.lock()
        guard pipe(&inPipe) == 0, pipe(&outPipe) == 0, pipe(&errPipe) == 0 else {
            spawnLock.unlock()
            return failed(arguments, "pipe failed: \(String(cString: strerror(errno)))")
        }
        // Only the child's 0, 1 and 2 (dup2 clears the flag) reach the child; runs in
        // parallel must not inherit each other's pipes, or a reader never sees the end.
        for fd in inPipe + outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        _ = addChdir(&actions, directory)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        spawnLock.unlock()
        for fd in [inPipe[0], outPipe[1], errPipe[1]] { close(fd) }
        guard spawned == 0 else {
            for fd in [inPipe[1], outPipe[0], errPipe[0]] { close(fd) }
            return failed(arguments, "posix_spawn \(executable) failed: \(String(cString: strerror(spawned)))")
        }

        let (out, err, timedOut) = pump(stdin: stdin, to: inPipe[1], stdout: outPipe[0], stderr: errPipe[0], pid: pid)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return CommandResult(arguments: arguments, status: exitStatus, stdoutBytes: out, stderrBytes: err,
                             timedOut: timedOut)
    }

    /// Writes `stdin` and reads both outputs until the child closes them; kills it after
    /// the timeout. Closes the three descriptors.
    private static func pump(stdin: [UInt8], to input: Int32, stdout: Int32, stderr: Int32,
                             pid: pid_t) -> ([UInt8], [UInt8], Bool) {
        var out: [UInt8] = [], err: [UInt8] = []
        var written = 0
        var inputFD: Int32 = input
        _ = fcntl(inputFD, F_SETFL, fcntl(inputFD, F_GETFL) | O_NONBLOCK)
        if stdin.isEmpty { close(inputFD); inputFD = -1 }
        var open: [Int32: Bool] = [stdout: true, stderr: true]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = monotonicMilliseconds() + Int64(timeoutMilliseconds)
        var timedOut = false
        while open.values.contains(true) {
            var fds: [pollfd] = []
            if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            for (fd, isOpen) in open where isOpen { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let remaining = deadline - monotonicMilliseconds()
            if remaining <= 0 {
                timedOut = true
                kill(pid, SIGKILL)
                break
            }
            let n = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 1000)))
            if n < 0 && errno != EINTR { break }
            for p in fds where p.revents != 0 {
                if p.fd == inputFD {
                    let count = stdin[written...].withUnsafeBytes { write(inputFD, $0.baseAddress, $0.count) }
                    if count > 0 { written += count }
                    if count < 0 && errno != EAGAIN && errno != EINTR || written == stdin.count {
                        close(inputFD)
                        inputFD = -1
                    }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    if p.fd == stdout { out += buffer[0..<count] } else { err += buffer[0..<count] }
                } else if count == 0 || errno != EINTR && errno != EAGAIN {
                    open[p.fd] = false
                }
            }
        }
        if inputFD >= 0 { close(inputFD) }
        close(stdout)
        close(stderr)
        return (out, err, timedOut)
    }

    private static func failed(_ arguments: [String], _ message: String) -> CommandResult {
        CommandResult(arguments: arguments, status: -1, stdoutBytes: [], stderrBytes: Array(message.utf8), timedOut: false)
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which Swift's Glibc
    /// module does not declare (it needs `_GNU_SOURCE`).
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>,
                                                 UnsafePointer<CChar>) -> Int32
    private static let addChdir: AddChdir? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        else { return nil }
        return unsafeBitCast(symbol, to: AddChdir.self)
    }()

    private static let spawnLock = SpawnLock()

    /// At most one child a core at once (see ``AsyncLimit``).
    private static let children = AsyncLimit.perCore()

    /// A child that exits without reading its input must not kill the test process.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    static func monotonicMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// The test process's environment, read once.
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

/// A pthread mutex for ``CommandRunner``'s spawns.
final class SpawnLock: @unchecked Sendable {
    // @unchecked Sendable: the mutex is only used through lock() and unlock().
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
