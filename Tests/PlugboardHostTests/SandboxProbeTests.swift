#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import PlugboardHost
import PlugboardTestSupport
import Testing

/// Each claim of docs/SECURITY.md's "The isolated plugin's sandbox", proved on a real
/// child: `sandbox-probe` applies the worker's sandbox to itself (the default read-only
/// paths, the given grants) and then tries what the test tells it.
@Suite struct SandboxProbeTests {
    /// The conditions of the tests that apply the whole sandbox, and why they are skipped.
    static let sandboxes = Sandbox.seccompAvailable && !Probe.underAddressSanitizer
    static let noSeccomp = Probe.underAddressSanitizer
        ? "under AddressSanitizer, whose shadow memory is terabytes of writable mappings: no memory limit can apply"
        : "the kernel has no seccomp filters, or this architecture has no table"
    static let noLandlock = "the kernel has no Landlock"

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func execve_isRefusedWithEPERM_andReported_andTheChildLivesOn() throws {
        let run = try Probe.run(["execve", "thread"])
        #expect(run.lines.contains("execve: errno EPERM"), "\(run)")
        #expect(run.reports.contains { $0.hasPrefix("sandbox refused system call execve (") }, "\(run)")
        #expect(run.lines.contains("thread: ok") && run.exitStatus == 0, "\(run)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func namespacesAndPtrace_areRefusedWithEPERM_andReported() throws {
        let run = try Probe.run(["unshare", "clone-new-user", "ptrace"])
        for (action, call) in [("unshare", "unshare"), ("clone-new-user", "clone"), ("ptrace", "ptrace")] {
            #expect(run.lines.contains("\(action): errno EPERM"), "\(run)")
            #expect(run.reports.contains { $0.hasPrefix("sandbox refused system call \(call) (") }, "\(run)")
        }
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func threads_stillStart_pthreadAndDispatch() throws {
        let run = try Probe.run(["thread", "dispatch", "threads", "4"])
        #expect(run.lines.contains("thread: ok") && run.lines.contains("dispatch: ok"), "\(run)")
        #expect(run.lines.contains { $0.hasPrefix("status Threads:") } && run.reports.isEmpty, "\(run)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func replacingTheSIGSYSHandler_killsTheChild() throws {
        let run = try Probe.run(["replace-sigsys", "thread"])
        #expect(run.signal == SIGSYS, "\(run)")
        #expect(!run.lines.contains("replace-sigsys: ok") && !run.lines.contains("thread: ok"), "\(run)")
    }

    @Test(.enabled(if: sandboxes && Sandbox.landlockABI != nil, "\(noSeccomp), or \(noLandlock)"))
    func writes_outsideTheGrant_areRefused_insideWork() throws {
        let granted = BuildProducts.temporaryFolder("sandbox-rw")
        let outside = BuildProducts.temporaryFolder("sandbox-outside")
        let run = try Probe.run(["--rw", granted, "write", "\(granted)/x", "read", "\(granted)/x", "write", "\(outside)/x",
                                 "read", "/etc/passwd", "read", "/etc/resolv.conf",
                                 "read", "/proc/\(getpid())/stat"])
        #expect(run.lines.contains("write \(granted)/x: ok") && run.lines.contains("read \(granted)/x: ok"), "\(run)")
        #expect(run.lines.contains("write \(outside)/x: errno EACCES"), "\(run)")
        #expect(run.lines.contains("read /etc/passwd: errno EACCES"), "\(run)")
        #expect(run.lines.contains("read /proc/\(getpid())/stat: ok"), "\(run)")
        #expect(access("\(outside)/x", F_OK) != 0)
        if access("/etc/resolv.conf", R_OK) == 0 { #expect(run.lines.contains("read /etc/resolv.conf: ok"), "\(run)") }
    }

    /// /proc is granted (Dispatch reads its threads' entries there): another process's
    /// entries are listed and its `stat` read, as by any user, but not its `environ` or
    /// `mem`, the host's included (a worker started as root has lost CAP_SYS_PTRACE, and
    /// Landlock refuses ptrace access to a process outside the sandbox).
    @Test(.enabled(if: sandboxes && Sandbox.landlockABI != nil, "\(noSeccomp), or \(noLandlock)"))
    func theHostsEnvironmentAndMemory_areNotReadable() throws {
        let host = getpid()
        let run = try Probe.run(["read", "/proc/\(host)/environ", "read", "/proc/\(host)/mem", "read", "/proc/\(host)/stat"])
        #expect(run.lines.contains("read /proc/\(host)/environ: errno EACCES"), "\(run)")
        #expect(run.lines.contains("read /proc/\(host)/mem: errno EACCES"), "\(run)")
        #expect(run.lines.contains("read /proc/\(host)/stat: ok"), "\(run)")
    }

    @Test(.enabled(if: sandboxes && (Sandbox.landlockABI ?? 0) >= 6, "\(noSeccomp), or Landlock older than ABI 6"))
    func signals_toTheHost_areRefused() throws {
        let run = try Probe.run(["kill-parent"])
        #expect(run.lines.contains("kill-parent: errno EPERM"), "\(run)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func memory_pastTheLimit_mallocReturnsNull_aSwiftAllocationAbortsTheChild() throws {
        let run = try Probe.run(["--memory-mb", "256", "alloc", "64", "alloc", "512", "limits"])
        #expect(run.lines.contains("alloc 64: ok") && run.lines.contains("alloc 512: null"), "\(run)")
        #expect(run.lines.contains("limits Max data size \(256 << 20) \(256 << 20) bytes"), "\(run)")
        #expect(run.lines.contains("limits Max core file size 0 0 bytes"), "\(run)")
        let swift = try Probe.run(["--memory-mb", "256", "swift-alloc", "512"])
        // The Swift runtime's allocator, refused, reports "Could not allocate memory" and aborts.
        #expect(swift.signal == SIGABRT, "\(swift)")
        #expect(!swift.lines.contains { $0.hasPrefix("swift-alloc 512: ok") }, "\(swift)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func descriptors_notKept_areClosed_andOpenFilesAreLimited() throws {
        let run = try Probe.run(["--leak-keep", "--open-files", "32", "fds", "open-many", "64"])
        let leak = try #require(run.lines.first { $0.hasPrefix("leaked ") }?.split(separator: " "), "\(run)")
        #expect(run.lines.contains("fds: 0 1 2 \(leak[3])"), "\(run)")
        #expect(run.lines.contains { $0.hasPrefix("open-many 64: errno EMFILE after ") }, "\(run)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func realPlugins_stillLoad_withTheDefaultReadOnlyPaths() throws {
        let cache = BuildProducts.temporaryFolder("sandbox-cache")
        let copy = "\(cache)/memory-copy.so"
        #expect(Probe.copy(BuildProducts.library("MemoryStorage"), to: copy))
        var actions = ["--cache", cache]
        for name in ["MemoryStorage", "FileStorage"] { actions += ["dlopen", BuildProducts.library(name)] }
        actions += ["dlopen", copy]
        let run = try Probe.run(actions)
        for path in [BuildProducts.library("MemoryStorage"), BuildProducts.library("FileStorage"), copy] {
            #expect(run.lines.contains("dlopen \(path): ok"), "\(run)")
        }
        if Sandbox.landlockABI != nil { #expect(run.lines.contains { $0.contains("landlock ABI") }, "\(run)") }
        #expect(run.reports.isEmpty, "\(run)")
    }

    /// The network stays open (S3Storage needs it): a TCP connection, and a name resolved
    /// through /etc/hosts and /etc/nsswitch.conf, which the default paths grant; raw
    /// sockets do not.
    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func theNetwork_staysOpen() throws {
        let listener = try #require(LoopbackSocket.bound(listening: true))
        defer { close(listener.fd) }
        let run = try Probe.run(["connect", String(listener.port), "resolve", "localhost", "raw-socket"])
        #expect(run.lines.contains("connect \(listener.port): ok"), "\(run)")
        #expect(run.lines.contains("resolve localhost: ok"), "\(run)")
        // Raw sockets need CAP_NET_RAW, which a worker started as root has dropped.
        #expect(run.lines.contains("raw-socket: errno EPERM"), "\(run)")
        #expect(run.reports.isEmpty, "\(run)")
    }

    /// As a worker loads a plugin: through the host's loader, into a container of its own,
    /// with the plugin cache and FileStorage's root granted read-write; then one put and get.
    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func realPlugins_loadThroughTheLoader_andServe_withTheirFoldersGranted() throws {
        let cache = BuildProducts.temporaryFolder("sandbox-loader-cache")
        let root = BuildProducts.temporaryFolder("sandbox-root")
        var actions = ["--rw", cache, "--rw", root]
        actions += ["load", BuildProducts.library("MemoryStorage"), cache, "-", "load", BuildProducts.library("FileStorage"), cache, root]
        let run = try Probe.run(actions)
        for name in ["MemoryStorage", "FileStorage"] {
            #expect(run.lines.contains("load \(BuildProducts.library(name)): ok"), "\(run)")
        }
        #expect(run.reports.isEmpty && run.exitStatus == 0, "\(run)")
    }

    @Test(.enabled(if: sandboxes, "\(noSeccomp)"))
    func aThreadStartedBefore_isRefused() throws {
        let run = try Probe.run(["--start-thread", "thread"])
        #expect(run.lines.contains { $0.hasPrefix("sandbox failed: sandbox.threads_running") }, "\(run)")
        #expect(run.exitStatus == 3, "\(run)")
    }

    @Test func policy_withARelativePathOrTooLittleMemory_isRefusedBeforeAnythingChanges() {
        // Refused by the first check, before the thread count: safe to call in the test runner.
        let cases: [(SandboxPolicy, String)] = [
            (SandboxPolicy(readWritePaths: ["data"], readOnlyPaths: []), "Expected an absolute path without NUL characters; found \"data\""),
            (SandboxPolicy(memoryLimitBytes: 8 << 20, readOnlyPaths: []), "Expected at least 64 MiB, what a worker's runtime and threads need; found 8388608 bytes"),
        ]
        for (policy, detail) in cases {
            do {
                _ = try Sandbox.apply(policy, reportDescriptor: 2)
                Issue.record("applied \(policy)")
            } catch {
                #expect(error.code == .sandboxPolicyInvalid)
                #expect(error.detail?.hasPrefix(detail) == true, "\(error)")
                #expect(error.hint != nil)
            }
        }
    }
}

/// One run of `sandbox-probe`: its standard output's lines, the refusals it reported on
/// standard error, and how it ended.
struct Probe: CustomStringConvertible {
    let lines: [String]
    let reports: [String]
    let exitStatus: Int32?
    let signal: Int32?

    var description: String {
        "exit \(exitStatus.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-")\nstdout:\n\(lines.joined(separator: "\n"))\nreports:\n\(reports.joined(separator: "\n"))"
    }

    /// Whether this process (and so the probe, built alike) runs under a sanitizer.
    static let underAddressSanitizer = Sandbox.underSanitizer

    static func run(_ arguments: [String]) throws -> Probe {
        let folder = BuildProducts.temporaryFolder("sandbox-probe")
        let errors = "\(folder)/stderr"
        var pipe: [Int32] = [0, 0]
        #expect(Glibc.pipe(&pipe) == 0)
        var environment = ChildProcess.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let pid = try ChildProcess.spawn("\(BuildProducts.folder)/sandbox-probe", arguments, environment: environment,
                                         stdout: .descriptor(pipe[1]), stderr: .file(errors, append: false))
        close(pipe[1])
        // The end of the pipe is the event; the bound only says the child hung.
        var output: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(120)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 1000) <= 0 { continue }
            let n = read(pipe[0], &chunk, chunk.count)
            if n <= 0 { break }
            output += chunk[0..<n]
        }
        close(pipe[0])
        if ContinuousClock.now >= deadline { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        let reports = readFile(errors).split(separator: "\n").map(String.init).filter { $0.hasPrefix("sandbox refused") }
        return Probe(lines: String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init), reports: reports,
                     exitStatus: exited ? (status >> 8) & 0xff : nil, signal: exited ? nil : status & 0x7f)
    }

    static func readFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        return String(decoding: (try? DescriptorIO.readToEnd(fd)) ?? [], as: UTF8.self)
    }

    static func copy(_ source: String, to target: String) -> Bool {
        let input = open(source, O_RDONLY)
        let output = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o755)
        defer {
            close(input)
            close(output)
        }
        guard input >= 0, output >= 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = read(input, &chunk, chunk.count)
            if n == 0 { return true }
            if n < 0 || write(output, chunk, n) != n { return false }
        }
    }
}
