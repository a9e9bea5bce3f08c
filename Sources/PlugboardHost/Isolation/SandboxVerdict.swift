#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency

/// The system calls a worker's sandbox refused while the worker started, as its report
/// pipe delivers them (``IsolatedPlugin`` reads the pipe on a thread of its own).
final class SandboxRefusals: Sendable {
    private let box = LockedValueBox<(lines: [String], closed: Bool, waiters: [CheckedContinuation<[String], Never>])>(([], false, []))

    func add(_ line: String) {
        box.withLock { b in
            // The first few tell the story; a plugin that loops on a refused call must not grow this.
            if !b.closed && b.lines.count < 8 { b.lines.append(line) }
        }
    }

    /// No more to come: the pipe ended (its worker is gone), or the worker is ready.
    func close() {
        let (lines, waiters) = box.withLock { b in
            b.closed = true
            defer { b.waiters.removeAll() }
            return (b.lines, b.waiters)
        }
        for w in waiters { w.resume(returning: lines) }
    }

    /// Every refusal, once the pipe has ended: a killed worker's pipe ends with it, so all
    /// it wrote before it failed has been read. At most 2 s: a process the plugin started
    /// outside the worker's group could hold the pipe open.
    func all() async -> [String] {
        let timer = Task { [self] in
            try await Task.sleep(for: .seconds(2))
            close()
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (go: CheckedContinuation<[String], Never>) in
            let now: [String]? = box.withLock { b in
                if b.closed { return b.lines }
                b.waiters.append(go)
                return nil
            }
            if let now { go.resume(returning: now) }
        }
    }
}

/// Tells when a worker that failed to start failed because of its sandbox, and says so
/// with the sandbox's own code (docs/ERRORS.md, "sandbox"): a plugin that works in process
/// but not in its worker must be refused by the preflight (which is a worker's start) with
/// what the sandbox refused, not with a symptom.
struct SandboxVerdict {
    let plugin: String
    let policy: SandboxPolicy

    /// `error` as the sandbox explains it, or unchanged when the sandbox is not its cause:
    /// a refused system call (`refused`: the report lines) is `sandbox.syscall_refused`; a
    /// permission error under Landlock is `sandbox.access_refused`; a death by `signal`
    /// with a peak resident memory (`peakBytes`) of at least three quarters of the memory
    /// limit is `sandbox.memory_exceeded`.
    func explain(_ error: PlugboardError, refused: [String], signal: Int32?, peakBytes: UInt64?) -> PlugboardError {
        if error.code.rawValue.hasPrefix("sandbox.") { return error }
        let failed = "\(error.code): \(error.message)"
        if let first = refused.first {
            let call = first.hasPrefix("sandbox refused ") ? String(first.dropFirst("sandbox refused ".count)) : first
            let more = refused.count > 1 ? " (and \(refused.count - 1) more refusal\(refused.count > 2 ? "s" : ""))" : ""
            return PlugboardError(.sandboxSyscallRefused, "plugin \"\(plugin)\"'s sandbox refused \(call)\(more), and its worker failed to start",
                detail: "An isolated plugin's worker runs under a seccomp filter that refuses starting programs, ptrace, mount, module loading, bpf, namespaces and the like (docs/SECURITY.md); the call failed with EPERM, and then: \(failed).",
                hint: "Keep the plugin from that call (or let it go on without it), or run it in process (\"isolation\": \"in-process\") if it can be trusted with the host.")
        }
        if Self.accessDenied(error), Sandbox.landlockABI != nil {
            let granted = policy.readWritePaths.filter { $0 != "/dev/null" }
            return PlugboardError(.sandboxAccessRefused, "plugin \"\(plugin)\" was refused file access by its sandbox, and its worker failed to start",
                detail: "\(failed)." + (error.detail.map { " " + $0 } ?? "") + " The worker's sandbox (Landlock) grants writing to "
                    + (granted.isEmpty ? "no path" : granted.joined(separator: ", ") + " alone")
                    + ", and reading what loading needs; any other path is refused with EACCES whatever its permissions.",
                hint: "Grant the path in the plugin's manifest entry, \"sandbox\": {\"readWrite\": [\"data\"]} (relative to the manifest's folder), or keep the plugin from it.")
        }
        // Under a sanitizer the worker sets no memory limit (WorkerChild.bootstrap): none to blame.
        if let signal, let peakBytes, !Sandbox.underSanitizer, policy.memoryLimitBytes < UInt64.max / 4,
           peakBytes * 4 >= policy.memoryLimitBytes * 3 {
            return PlugboardError(.sandboxMemoryExceeded,
                "plugin \"\(plugin)\"'s worker died of \(PreflightRunner.signalName(signal)) at its sandbox's memory limit of \(policy.memoryLimitBytes >> 20) MiB",
                detail: "Its peak resident memory was \(peakBytes >> 20) MiB of the \(policy.memoryLimitBytes >> 20) MiB the sandbox allows (RLIMIT_DATA); past the limit an allocation fails and the Swift runtime ends the process. \(error.message).",
                hint: "Raise \"memoryMB\" in the plugin's \"sandbox\" if it needs that much, or find what grows in its load or start.")
        }
        return error
    }

    private static func accessDenied(_ error: PlugboardError) -> Bool {
        let text = [error.message, error.detail ?? ""].joined(separator: " ")
        return error.code == .storageAccessDenied || text.contains("EACCES") || text.contains("Permission denied")
    }
}
