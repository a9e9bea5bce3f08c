#if canImport(Glibc)
import Glibc
#endif

/// Starts the host's own children (`plugboard preflight`, `plugboard worker`): in a process
/// group of their own (so that whatever a plugin starts is killed with them), with default
/// signal dispositions and an empty mask, the given descriptors at 3, 4, ..., and their
/// standard output on the host's standard error (a plugin that prints must not write into
/// the host's output).
enum ChildProcess {
    /// `arguments` is the whole argv after the executable. Call from a thread that lives as
    /// long as the child: the child's `PR_SET_PDEATHSIG` fires when the spawning thread exits.
    static func spawn(_ executable: String, arguments: [String], environment: [String],
                      descriptors: [Int32]) -> Result<pid_t, SpawnFailure> {
        // dup2 onto a descriptor's own number would keep its close-on-exec flag: move the
        // child's ends above the numbers they are handed over as.
        let first = Int32(3)
        let moved = descriptors.map { fd -> (fd: Int32, owned: Bool) in
            guard fd < first + Int32(descriptors.count) else { return (fd, false) }
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, first + Int32(descriptors.count))
            return copy >= 0 ? (copy, true) : (fd, false)
        }
        defer { for m in moved where m.owned { close(m.fd) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (index, m) in moved.enumerated() { posix_spawn_file_actions_adddup2(&actions, m.fd, first + Int32(index)) }
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let rc = withCStrings([executable] + arguments) { argv in
            withCStrings(environment) { envp in posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
        }
        return rc == 0 ? .success(pid) : .failure(SpawnFailure(text: "posix_spawn \(executable): \(PluginFile.errnoText(rc))"))
    }

    /// A child's whole environment, as `NAME=value` pairs: the host's, captured once, with
    /// `SWIFT_BACKTRACE=enable=no` in place of any (a crash is what a preflight or a worker's
    /// supervisor expects; the backtracer would spend seconds on it) and without
    /// `NOTIFY_SOCKET` (only the host speaks to systemd).
    static func environment(_ host: [String: String]) -> [String] {
        var pairs = host.filter { $0.key != "SWIFT_BACKTRACE" && $0.key != "NOTIFY_SOCKET" }.map { "\($0.key)=\($0.value)" }.sorted()
        pairs.append("SWIFT_BACKTRACE=enable=no")
        return pairs
    }

    struct SpawnFailure: Error {
        let text: String
    }

    /// How a reaped child ended, from its wait status.
    static func termination(_ status: Int32) -> (exitStatus: Int32?, signal: Int32?) {
        let signal = status & 0x7F
        if signal == 0 { return ((status >> 8) & 0xFF, nil) }
        return (nil, signal)
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
