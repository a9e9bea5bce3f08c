#if canImport(Glibc)
import Glibc
#endif
import PlugboardBytes

/// Runs a test's subject, in a child (`as-user`), as a process that permission bits apply to.
///
/// Root passes every permission check, and CI runs as root: a test of a file or folder its
/// user may not read or write would check nothing there. As root the child stays root
/// without the capabilities that pass permission checks (CAP_DAC_OVERRIDE,
/// CAP_DAC_READ_SEARCH, CAP_FOWNER), so root's own files answer by their owner bits; not
/// another user, who could not reach a checkout under a folder only root may enter, such
/// as /root. As anyone else the child stays this process's user. Either way the test's
/// files are the child's own (``own(_:)`` gives them to it) and meet the same bits.
public enum AnotherUser {
    /// The user and group the child runs as: this process's (for root, root without its
    /// permission capabilities).
    public static let ids: (user: uid_t, group: gid_t) = (geteuid(), getegid())

    /// What the child did: its exit status (nil when a signal ended it, or it hung and was
    /// killed), and its output.
    public struct Run: Sendable, CustomStringConvertible {
        public let exitStatus: Int32?
        public let standardOutput: String
        public let standardError: String

        public var description: String {
            "as user \(AnotherUser.ids.user): exit \(exitStatus.map(String.init) ?? "by a signal")\nstdout:\n\(standardOutput)\nstderr:\n\(standardError)"
        }
    }

    /// Gives `path` (not following a symbolic link) to the child's user and group, so that
    /// its owner bits decide what the child may do with it (a no-op where this process
    /// owns it already).
    public static func own(_ path: String) throws(ChildProcessError) {
        guard geteuid() == 0 else { return }
        guard lchown(path, ids.user, ids.group) == 0 else {
            throw ChildProcessError("could not give \(path) to user \(ids.user): \(String(cString: strerror(errno)))")
        }
    }

    /// Runs `program` with `arguments` and `environment` as the child's user and waits for
    /// it; its standard error goes through a file in `folder` (opened before the user
    /// changes). Blocks: call it on a thread of its own (``OwnThread``). The end of its
    /// standard output is the event waited for; `timeoutSeconds` only says it hung, and the
    /// child is then killed.
    public static func run(_ program: String, _ arguments: [String], environment: [String: String],
                           outputIn folder: String, timeoutSeconds: Int64 = 300) throws(ChildProcessError) -> Run {
        let errors = "\(folder)/as-user.stderr"
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw ChildProcessError("could not make a pipe: \(String(cString: strerror(errno)))") }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn("\(BuildProducts.folder)/as-user", ["\(ids.user)", "\(ids.group)", program] + arguments,
                                         environment: environment, stdout: .descriptor(pipe[1]), stderr: .file(errors, append: false))
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        close(pipe[1])
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(timeoutSeconds)
        var hung = true
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 1000) <= 0 { continue }
            let n = Glibc.read(pipe[0], &chunk, chunk.count)
            if n <= 0 {
                hung = false
                break
            }
            output += chunk[0..<n]
        }
        close(pipe[0])
        if hung { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return Run(exitStatus: !hung && status & 0x7f == 0 ? (status >> 8) & 0xff : nil,
                   standardOutput: String(decoding: output, as: UTF8.self), standardError: read(errors))
    }

    private static func read(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        return String(decoding: (try? DescriptorIO.readToEnd(fd)) ?? [], as: UTF8.self)
    }
}
