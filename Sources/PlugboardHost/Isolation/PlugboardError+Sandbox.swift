import PlugboardAPI

// The refusals of an isolated plugin's sandbox (docs/ERRORS.md, "sandbox"), raised by
// ``Sandbox/apply(_:reportDescriptor:keepDescriptors:)`` in the worker child before it maps
// the plugin: the worker then exits without loading it; and what the host tells from a worker
// that failed to start in its sandbox (``SandboxVerdict``), the preflight of an isolated
// plugin included.
extension PlugboardError.Code {
    /// The policy cannot be applied as written: a relative path, a path with NUL, too many
    /// descriptors to keep, a memory limit below what the process already uses.
    public static let sandboxPolicyInvalid: Self = "sandbox.policy_invalid"
    /// More than one thread runs: Landlock would bind only the calling one.
    public static let sandboxThreadsRunning: Self = "sandbox.threads_running"
    /// The descriptors not kept could not be closed.
    public static let sandboxDescriptorsFailed: Self = "sandbox.descriptors_failed"
    /// A resource limit (memory, open files, core dumps) could not be set.
    public static let sandboxLimitFailed: Self = "sandbox.limit_failed"
    /// The SIGSYS handler or `PR_SET_NO_NEW_PRIVS` could not be set.
    public static let sandboxSetupFailed: Self = "sandbox.setup_failed"
    /// The kernel has Landlock but refused the ruleset.
    public static let sandboxLandlockFailed: Self = "sandbox.landlock_failed"
    /// The kernel has no seccomp filters, or this build has no system-call table for the
    /// machine's architecture: the plugin cannot be confined.
    public static let sandboxSeccompUnavailable: Self = "sandbox.seccomp_unavailable"
    /// The kernel refused the seccomp filter.
    public static let sandboxSeccompFailed: Self = "sandbox.seccomp_failed"
    /// The plugin's load or start called a system call the filter refuses, and failed.
    public static let sandboxSyscallRefused: Self = "sandbox.syscall_refused"
    /// The plugin's load or start failed with a permission error under Landlock: a path
    /// outside its grant.
    public static let sandboxAccessRefused: Self = "sandbox.access_refused"
    /// The worker died of a signal before it was ready, its peak memory near its limit.
    public static let sandboxMemoryExceeded: Self = "sandbox.memory_exceeded"
}
