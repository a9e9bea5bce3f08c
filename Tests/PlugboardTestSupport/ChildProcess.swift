#if canImport(Glibc)
import Glibc
#endif

/// Starting the servers the tests run (`plugboard serve`, etcd) as a service manager
/// starts a daemon: `posix_spawn` with an empty signal mask and default signal actions. A
/// child inherits the mask of the thread that spawns it, and a test runner's worker
/// threads block SIGTERM (Foundation's `Process` passes that mask on), which would test
/// the test runner's state instead of the server's.
public enum ChildProcess {
    /// Where one of the child's output descriptors goes.
    public enum Output: Sendable {
        /// A descriptor of this process (a pipe's write end), duplicated onto it.
        case descriptor(Int32)
        /// A file, created if needed, emptied first or appended to.
        case file(String, append: Bool)
        /// Wherever the child's standard output goes (for standard error).
        case standardOutput
    }

    /// Spawns `program` (a path) with `arguments` and exactly `environment`; standard
    /// input is /dev/null, and `descriptors` become the child's 3, 4, ... (a worker's wire).
    /// Returns the child's pid, for the caller to signal and reap.
    public static func spawn(_ program: String, _ arguments: [String], environment: [String: String],
                             stdout: Output, stderr: Output, descriptors: [Int32] = []) throws(ChildProcessError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Staged above every target number first, so that one descriptor's dup2 cannot
        // overwrite another that is still to be moved (a source may already be 3 or 4).
        let staged = descriptors.map { fcntl($0, F_DUPFD_CLOEXEC, 3 + Int32(descriptors.count)) }
        defer { for fd in staged where fd >= 0 { close(fd) } }
        guard !staged.contains(-1) else { throw ChildProcessError("could not duplicate a descriptor for \(program): \(String(cString: strerror(errno)))") }
        for (target, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .file(let path, let append):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
            case .standardOutput: posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        // After the outputs: an output descriptor may be one of the numbers these take.
        for (index, fd) in staged.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, 3 + Int32(index)) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw ChildProcessError("could not start \(program): \(String(cString: strerror(result)))") }
        return pid
    }

    /// This process's environment, read from `environ` (without Foundation).
    public static var environment: [String: String] {
        var out: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                out[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return out
    }
}

/// Why a child could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
