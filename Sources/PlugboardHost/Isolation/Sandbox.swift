#if canImport(Glibc)
import Glibc
#endif
import CPlugboardSandbox
import PlugboardAPI
import PlugboardBytes

/// The sandbox an isolated plugin's worker child applies to itself before it maps the
/// plugin (docs/SECURITY.md, "The isolated plugin's sandbox").
///
/// ```swift
/// let report = try Sandbox.apply(policy, reportDescriptor: wire, keepDescriptors: [wire, ring])
/// // now map the plugin
/// ```
///
/// - Important: call it from the main thread while it is the process's only thread, before
///   anything starts one (Dispatch, a Swift task on the global executor): Landlock binds
///   the calling thread and the threads it starts afterwards, never those already running,
///   so ``apply(_:reportDescriptor:keepDescriptors:)`` refuses (`sandbox.threads_running`)
///   rather than leave one unconfined. It cannot be undone.
public enum Sandbox {
    /// Applies `policy` to this process, in this order: closes every descriptor but 0, 1,
    /// 2, `reportDescriptor` and `keepDescriptors`; sets the limits (`RLIMIT_DATA`,
    /// `RLIMIT_NOFILE`, `RLIMIT_CORE` 0); installs the SIGSYS handler that answers a refused
    /// system call; sets `PR_SET_NO_NEW_PRIVS`; drops every capability (a worker started as
    /// root keeps user ID 0, not root's powers); restricts file access with Landlock where
    /// the kernel has it; installs the seccomp filter last, so that nothing before it is
    /// refused.
    ///
    /// The standard descriptors stay open because a closed one is reused by the next
    /// `open`, and a plugin's `print` would then write into its own data; point them where
    /// they belong before calling.
    ///
    /// A refused system call fails with `EPERM` in the plugin, and the handler writes one
    /// line to `reportDescriptor`: `sandbox refused system call execve (59)`. A plugin that
    /// replaces the SIGSYS handler, or blocks SIGSYS when a call is refused, is killed by
    /// SIGSYS instead.
    ///
    /// - Parameters:
    ///   - policy: the limits and the granted paths.
    ///   - reportDescriptor: where refusals are reported (a pipe or socket the host reads).
    ///   - keepDescriptors: the other descriptors the worker needs (the host's wire).
    /// - Returns: what was put in place; `landlockABI` is nil on a kernel without Landlock.
    /// - Throws: `sandbox.*` (docs/ERRORS.md) naming the step, what was expected and found.
    ///   After a throw the process is partly confined: exit without loading the plugin.
    public static func apply(_ policy: SandboxPolicy, reportDescriptor: Int32,
                             keepDescriptors: [Int32] = []) throws(PlugboardError) -> SandboxReport {
        try check(policy)
        let threads = plugboard_sandbox_thread_count()
        guard threads == 1 else {
            throw PlugboardError(.sandboxThreadsRunning, "cannot apply the sandbox while \(threads) threads run",
                detail: "Expected the process's only thread; found \(threads) threads in /proc/self/task. Landlock confines the calling thread and those it starts later, never the others.",
                hint: "Apply the sandbox first thing in the worker's main, before Dispatch or a Swift task starts a thread.")
        }
        let kept = try closeDescriptors(keeping: [reportDescriptor] + keepDescriptors)
        let (memory, openFiles) = try setLimits(policy)
        try step(plugboard_sandbox_install_sigsys_handler(reportDescriptor), "install the SIGSYS handler",
                 hint: "The worker may already run under a filter that refuses sigaction; run it outside other sandboxes.")
        try step(plugboard_sandbox_no_new_privs(), "set PR_SET_NO_NEW_PRIVS",
                 hint: "The kernel is older than 3.5 or a security module refuses it; the sandbox needs it.")
        try step(plugboard_sandbox_drop_capabilities(), "drop the capabilities",
                 hint: "Dropping capabilities is always allowed; a security module may refuse capset: check the worker's profile.")
        let landlock = try restrictFiles(policy)
        try installFilter()
        return SandboxReport(landlockABI: landlock.abi, landlockUnavailableReason: landlock.unavailable,
                             signalsScoped: (landlock.abi ?? 0) >= 6, skippedPaths: landlock.skipped,
                             memoryLimitBytes: memory, openFiles: openFiles, keptDescriptors: kept, seccomp: true)
    }

    /// Refuses what cannot mean what it says before anything is changed.
    private static func check(_ policy: SandboxPolicy) throws(PlugboardError) {
        for path in policy.readWritePaths + policy.readOnlyPaths {
            guard path.hasPrefix("/"), !path.utf8.contains(0) else {
                throw PlugboardError(.sandboxPolicyInvalid, "sandbox path \(quoted(path)) is not an absolute path",
                    detail: "Expected an absolute path without NUL characters; found \(quoted(path)).",
                    hint: "Resolve paths against the manifest's folder before they reach the sandbox.")
            }
        }
        guard policy.memoryLimitBytes >= SandboxPolicy.minimumMemoryLimitBytes else {
            throw PlugboardError(.sandboxPolicyInvalid, "sandbox memory limit of \(policy.memoryLimitBytes) bytes is too small",
                detail: "Expected at least \(SandboxPolicy.minimumMemoryLimitBytes >> 20) MiB, what a worker's runtime and threads need; found \(policy.memoryLimitBytes) bytes.",
                hint: "Raise \"memoryMB\" in the plugin's \"sandbox\".")
        }
        if let used = dataInUse(), used >= policy.memoryLimitBytes {
            throw PlugboardError(.sandboxPolicyInvalid, "sandbox memory limit of \(policy.memoryLimitBytes >> 20) MiB is below what the worker already uses",
                detail: "Expected a limit above the process's writable memory; found \(used >> 20) MiB in use (VmData).",
                hint: "Raise \"memoryMB\" in the plugin's \"sandbox\".")
        }
    }

    /// Closes all but `keep`, which must be open, and the standard descriptors that are.
    private static func closeDescriptors(keeping keep: [Int32]) throws(PlugboardError) -> [Int32] {
        if let bad = keep.first(where: { $0 < 0 || fcntl($0, F_GETFD) < 0 }) {
            throw PlugboardError(.sandboxPolicyInvalid, "descriptor \(bad) to keep is not open",
                detail: "Expected open descriptors to keep; found \(bad), which is not one.",
                hint: "Pass the descriptors the worker was given (its wire to the host).")
        }
        let kept = Array(Set(keep + [0, 1, 2].filter { fcntl($0, F_GETFD) >= 0 })).sorted()
        let status = kept.withUnsafeBufferPointer { plugboard_sandbox_close_descriptors_except($0.baseAddress, $0.count) }
        guard status == 0 else {
            throw PlugboardError(.sandboxDescriptorsFailed, "could not close the worker's other descriptors: \(text(status))",
                detail: "Expected every descriptor but \(kept.map(String.init).joined(separator: ", ")) closed; close_range and /proc/self/fd both failed.",
                hint: status == -E2BIG ? "Keep at most 256 descriptors." : "Check that /proc is mounted in the worker.")
        }
        return kept
    }

    private static func setLimits(_ policy: SandboxPolicy) throws(PlugboardError) -> (memory: UInt64, openFiles: UInt64) {
        // Lowering a limit is always allowed; raising one past its hard limit is root's.
        let openFiles = min(policy.openFiles, plugboard_sandbox_get_limit(Int32(PLUGBOARD_SANDBOX_LIMIT_OPEN_FILES), 1))
        let limits: [(Int32, UInt64, String)] = [
            (Int32(PLUGBOARD_SANDBOX_LIMIT_DATA), policy.memoryLimitBytes, "RLIMIT_DATA"),
            (Int32(PLUGBOARD_SANDBOX_LIMIT_OPEN_FILES), openFiles, "RLIMIT_NOFILE"),
            (Int32(PLUGBOARD_SANDBOX_LIMIT_CORE), 0, "RLIMIT_CORE"),
        ]
        for (resource, value, name) in limits {
            let status = plugboard_sandbox_set_limit(resource, value)
            guard status == 0 else {
                let current = plugboard_sandbox_get_limit(resource, 0)
                throw PlugboardError(.sandboxLimitFailed, "could not set \(name) to \(value): \(text(status))",
                    detail: "Expected \(name) at \(value); found it at \(current == UInt64.max ? "unlimited" : String(current)), and setrlimit refused the change.",
                    hint: "A hard limit lower than the policy's can only be raised by root: lower the manifest's value, or raise the limit of the host's service.")
            }
        }
        return (policy.memoryLimitBytes, openFiles)
    }

    private static func restrictFiles(_ policy: SandboxPolicy) throws(PlugboardError)
        -> (abi: Int?, unavailable: String?, skipped: [SandboxReport.SkippedPath]) {
        let abi = plugboard_sandbox_landlock_abi()
        guard abi > 0 else {
            let reason = abi == -ENOSYS ? "the kernel has no Landlock"
                : abi == -EOPNOTSUPP ? "Landlock is disabled at boot (lsm=)" : text(abi)
            return (nil, reason, [])
        }
        guard let ruleset = plugboard_sandbox_landlock_begin(abi) else {
            throw landlockFailed("create the ruleset", errno: errno, abi: abi)
        }
        var skipped: [SandboxReport.SkippedPath] = []
        let grants = policy.readWritePaths.map { ($0, Int32(1)) } + policy.readOnlyPaths.map { ($0, Int32(0)) }
        for (path, writable) in grants {
            let status = plugboard_sandbox_landlock_allow(ruleset, path, writable)
            if status == 0 { continue }
            // A path the machine lacks (no /lib64 on aarch64) grants nothing to skip.
            if [ENOENT, ENOTDIR, EACCES, ELOOP, ENAMETOOLONG].contains(-status) {
                skipped.append(.init(path: path, reason: text(status)))
                continue
            }
            plugboard_sandbox_landlock_discard(ruleset)
            throw landlockFailed("grant \(quoted(path))", errno: -status, abi: abi)
        }
        let status = plugboard_sandbox_landlock_commit(ruleset)
        guard status == 0 else { throw landlockFailed("restrict the process", errno: -status, abi: abi) }
        return (Int(abi), nil, skipped)
    }

    private static func installFilter() throws(PlugboardError) {
        let status = plugboard_sandbox_install_seccomp()
        if status == 0 { return }
        if status == PLUGBOARD_SANDBOX_UNSUPPORTED_ARCH {
            throw PlugboardError(.sandboxSeccompUnavailable, "cannot confine a plugin on this architecture",
                detail: "Expected x86_64 or aarch64, whose system calls the filter lists; found another.",
                hint: "Run the plugin in process (\"isolation\": \"in-process\"), or add the architecture's table to CPlugboardSandbox.")
        }
        if status == -EINVAL {
            throw PlugboardError(.sandboxSeccompUnavailable, "the kernel refused the seccomp filter: \(text(status))",
                detail: "Expected a kernel with seccomp filters (CONFIG_SECCOMP_FILTER, Linux 3.17 or later); found one that refuses them.",
                hint: "Run the host on a kernel built with seccomp, or run the plugin in process.")
        }
        throw PlugboardError(.sandboxSeccompFailed, "could not install the seccomp filter: \(text(status))",
            detail: "Expected seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) to succeed after PR_SET_NO_NEW_PRIVS; found it refused.",
            hint: "A filter already in place (a container's) may refuse seccomp itself; allow it there.")
    }

    private static func step(_ status: Int32, _ what: String, hint: String) throws(PlugboardError) {
        guard status != 0 else { return }
        throw PlugboardError(.sandboxSetupFailed, "could not \(what): \(text(status))",
            detail: "Expected the call to succeed in a fresh worker; found it failed with \(text(status)).", hint: hint)
    }

    private static func landlockFailed(_ what: String, errno code: Int32, abi: Int32) -> PlugboardError {
        PlugboardError(.sandboxLandlockFailed, "could not \(what) with Landlock: \(text(-code))",
            detail: "The kernel reports Landlock ABI \(abi); expected it to accept the ruleset, found it failed with \(text(-code)).",
            hint: "Check that the kernel's Landlock is not restricted further (a parent's domain); else run the plugin in process.")
    }

    /// The kernel's Landlock ABI version, or nil when it has no Landlock (or it is disabled
    /// at boot): then ``apply(_:reportDescriptor:keepDescriptors:)`` leaves file access open.
    /// Whether this process runs under AddressSanitizer or ThreadSanitizer (their runtime
    /// is loaded): their shadow memory counts as writable data, so no memory limit holds.
    public static var underSanitizer: Bool {
        let everything = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT
        return dlsym(everything, "__asan_init") != nil || dlsym(everything, "__tsan_init") != nil
    }

    public static var landlockABI: Int? {
        let abi = plugboard_sandbox_landlock_abi()
        return abi > 0 ? Int(abi) : nil
    }

    /// Whether a seccomp filter can be installed: the kernel has seccomp (a `Seccomp:` line
    /// in /proc/self/status) and this build knows the architecture's system calls. Without
    /// it ``apply(_:reportDescriptor:keepDescriptors:)`` throws `sandbox.seccomp_unavailable`.
    public static var seccompAvailable: Bool {
        plugboard_sandbox_seccomp_architecture_supported() != 0 && statusField("Seccomp:") != nil
    }

    /// The process's writable memory in bytes (VmData), or nil.
    static func dataInUse() -> UInt64? {
        statusField("VmData:").flatMap { UInt64($0.filter(\.isNumber)) }.map { $0 * 1024 }
    }

    /// The value of the line of /proc/self/status that starts with `name`, or nil.
    private static func statusField(_ name: String) -> Substring? {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let bytes = try? DescriptorIO.readToEnd(fd, limit: 1 << 16) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.split(separator: "\n").first { $0.hasPrefix(name) }?.dropFirst(name.count)
    }

    private static func text(_ status: Int32) -> String { String(cString: strerror(-status)) }

    private static func quoted(_ text: String) -> String { ManifestReader.quoted(text) }
}
