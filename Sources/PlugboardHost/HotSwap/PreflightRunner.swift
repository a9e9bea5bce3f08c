#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlugboardAPI
import PlugboardConcurrency
import CPlugboardSystem

/// Runs preflight children: `plugboard preflight` in its own process group, with the
/// request on its descriptor 3 and its report on descriptor 4, killed with its group at
/// the deadline and always reaped.
///
/// Every child is spawned from one long-lived thread: `PR_SET_PDEATHSIG`, which the child
/// sets so that it dies with the host, fires when the *thread* that spawned it exits, and
/// threads of a pool come and go.
public final class PreflightRunner: Sendable {
    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
        case timedOut
        case notStarted(String)
    }

    /// What the host learned from one child.
    public struct Result: Sendable {
        /// A verdict for every plugin the child got through.
        public var records: [PluginRecord]
        /// The plugin whose code was running when the child died or hung (several, when
        /// it died stopping their services), with the error that says so.
        public var culprit: (name: String, error: PlugboardError)?
        public var culprits: [String] = []
        /// Plugins of the request that the child never reached.
        public var unchecked: [String]
        public var termination: Termination

        /// The error of the first plugin that did not pass, if any.
        public var firstFailure: (name: String, error: PlugboardError)? {
            if let culprit { return culprit }
            for r in records where r.state != .active {
                if let e = r.error { return (r.name, e) }
            }
            return nil
        }
    }

    /// The `plugboard` executable to run as `plugboard preflight`.
    public let executable: String
    /// What the child runs with: its environment (the host's, as captured at start) and
    /// the arguments after `preflight --parent-pid PID` (the host's log format).
    private let environment: [String]
    private let arguments: [String]
    private let logger: Logger
    private let spawner = SpawnerThread()
    /// The manifest as the host was given it, which a timeout's hint names.
    public let manifestPath: String

    /// `environment` is the host's, captured once at start: the child reads nothing else
    /// (``ChildProcess/environment(_:)`` says what changes in it).
    public init(executable: String, environment: [String: String] = [:], arguments: [String] = [], logger: Logger,
                manifestPath: String = "plugins.json") {
        self.executable = executable
        self.manifestPath = manifestPath
        self.environment = ChildProcess.environment(environment)
        self.arguments = arguments
        self.logger = logger.with("component", "preflight")
        // Writing a request to a child that died first must fail, not kill the host.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Runs one child over `request` and waits for its verdict, at most `timeoutSeconds`.
    public func run(_ request: PreflightRequest, timeoutSeconds: Double) async -> Result {
        let (executable, environment, arguments) = (executable, environment, arguments)
        let started = MonotonicClock.now()
        let (transcript, termination) = await onReloadThread {
            Self.runChild(executable, arguments: arguments, environment: environment, request: request, timeoutSeconds: timeoutSeconds)
        }
        let result = Self.verdict(request, transcript: transcript, termination: termination, timeoutSeconds: timeoutSeconds,
                                  manifestPath: manifestPath)
        logger.debug("preflight finished", metadata: [
            "plugins": .string(request.plugins.map(\.name).joined(separator: ",")),
            "ms": .string(String(Int((MonotonicClock.now() - started) * 1000))), "termination": .string("\(termination)")])
        return result
    }

    /// Runs blocking work of a reload (hashing, staging, mapping) on the runner's one
    /// long-lived thread, off the cooperative pool. One thread, not a pool: reloads run one
    /// at a time anyway, and the buffers of each reload then come back to the same malloc
    /// arena, so memory does not grow by an arena per thread over many reloads.
    func onReloadThread<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await BlockingWork.handOff(to: spawner.submit, body)
    }

    // MARK: - The child

    private static func runChild(_ executable: String, arguments: [String], environment: [String], request: PreflightRequest,
                                 timeoutSeconds: Double) -> (PreflightWire.Transcript, Termination) {
        let deadline = MonotonicClock.now() + timeoutSeconds
        var requestPipe: [Int32] = [-1, -1]
        var reportPipe: [Int32] = [-1, -1]
        guard plugboard_pipe_cloexec(&requestPipe) == 0 else { return (.init(), .notStarted("pipe: \(PluginFile.errnoText(errno))")) }
        guard plugboard_pipe_cloexec(&reportPipe) == 0 else {
            close(requestPipe[0]); close(requestPipe[1])
            return (.init(), .notStarted("pipe: \(PluginFile.errnoText(errno))"))
        }
        defer { close(requestPipe[1]); close(reportPipe[0]) }
        let spawned = ChildProcess.spawn(executable, arguments: ["preflight", "--parent-pid", String(getpid())] + arguments,
                                         environment: environment, descriptors: [requestPipe[0], reportPipe[1]])
        close(requestPipe[0])
        close(reportPipe[1])
        let pid: pid_t
        switch spawned {
        case .failure(let failure): return (.init(), .notStarted(failure.text))
        case .success(let p): pid = p
        }
        PreflightProbe.write(requestPipe[1], request.encoded())
        close(requestPipe[1])
        requestPipe[1] = -1
        let (bytes, finished) = readUntil(reportPipe[0], deadline: deadline)
        var status: Int32 = 0
        var termination: Termination
        if finished, waitUntil(pid, deadline: deadline, status: &status) {
            termination = Self.termination(status)
        } else {
            termination = .timedOut
        }
        // The whole group: whatever the plugin started goes too. Then reap.
        kill(-pid, SIGKILL)
        if termination == .timedOut {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        let transcript = (try? PreflightWire.parse(bytes)) ?? PreflightWire.Transcript()
        return (transcript, termination)
    }

    /// Reads until end of file (true) or the deadline (false).
    private static func readUntil(_ fd: Int32, deadline: Double) -> ([UInt8], Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline - MonotonicClock.now()
            guard left > 0 else { return (out, false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(min(left * 1000 + 1, 1_000)))
            if ready < 0 && errno != EINTR { return (out, false) }
            guard ready > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return (out, true) }
            if n == 0 { return (out, true) }
            // Bounded: a plugin cannot make the host hold an unbounded report.
            if out.count < 64 << 20 { out += buffer[0..<n] }
        }
    }

    /// Waits for `pid` to exit until the deadline; true when it did.
    private static func waitUntil(_ pid: pid_t, deadline: Double, status: inout Int32) -> Bool {
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { return true }
            if r < 0 && errno != EINTR { return true }
            if MonotonicClock.now() >= deadline { return false }
            usleep(2_000)
        }
    }

    private static func termination(_ status: Int32) -> Termination {
        let (exit, signal) = ChildProcess.termination(status)
        return signal.map { .signaled($0) } ?? .exited(exit ?? 0)
    }

    // MARK: - The verdict

    static func verdict(_ request: PreflightRequest, transcript: PreflightWire.Transcript,
                        termination: Termination, timeoutSeconds: Double, manifestPath: String = "plugins.json") -> Result {
        let names = request.plugins.map(\.name)
        let reported = Set(transcript.records.map(\.name))
        var result = Result(records: transcript.records, culprit: nil,
                            unchecked: names.filter { !reported.contains($0) }, termination: termination)
        let clean = termination == .exited(0) || termination == .exited(1)
        if clean && transcript.complete && result.unchecked.isEmpty { return result }
        // The plugin whose code ran last; if none was under way, the first not reported.
        let culprits = !transcript.running.isEmpty ? transcript.running : [result.unchecked.first ?? names.last ?? "?"]
        result.unchecked.removeAll { culprits.contains($0) }
        result.culprits = culprits
        let culprit = culprits.joined(separator: "\", \"")
        let error: PlugboardError
        switch termination {
        case .signaled(let sig):
            let name = signalName(sig)
            error = PlugboardError(.preflightCrashed, "plugin \"\(culprit)\" crashed in preflight: \(name)",
                detail: "The preflight child (plugboard preflight) died of \(name) (signal \(sig)) while running the plugin's code; the host never mapped it.",
                hint: "Run plugboard check --in-process in a scratch shell, or a debugger, to see where it crashes; fix the plugin and rebuild it.")
        case .timedOut:
            error = PlugboardError(.preflightTimeout, "plugin \"\(culprit)\" did not finish its preflight within \(formatSeconds(timeoutSeconds)) s",
                detail: "The preflight child was still running the plugin's code (registration, start or health check) at the deadline; it was killed with its process group.",
                hint: "Fix what hangs (a start that waits on an unreachable server?), or raise hotSwap.preflightTimeoutSeconds in \(manifestPath).")
        case .exited(let code):
            error = PlugboardError(.preflightExited, "plugin \"\(culprit)\" ended the preflight process with exit status \(code)",
                detail: "The preflight child exited while running the plugin's code, before it reported on it: the plugin calls exit (or _exit).",
                hint: "A plugin must never end the process; return errors from register(into:) and start() instead.")
        case .notStarted(let text):
            error = PlugboardError(.preflightFailed, "could not run the preflight of plugin \"\(culprit)\": \(text)",
                hint: "The host runs its own executable as plugboard preflight; check that it still exists and can be executed.")
        }
        result.culprit = (culprit, error)
        return result
    }

    /// A verdict for every plugin of `plugins`: one child checks them in order; when it
    /// dies in a plugin's code, that plugin gets the verdict and a new child checks the
    /// ones it did not reach (without it, so those that require it fail their requirement).
    ///
    /// The child hides `secrets` in its records; the host hides them again in what it
    /// reads, so that a report never carries a secret whatever the child did.
    ///
    /// `checkOnly` is `plugboard check`'s (``PreflightRequest/checkOnly``).
    public func runAll(_ plugins: [PreflightRequest.Plugin], environment: Environment, cacheDirectory: String,
                       timeoutSeconds: Double, secrets: SecretScrubber = .none,
                       checkOnly: Bool = false) async -> [String: PluginRecord] {
        var verdicts: [String: PluginRecord] = [:]
        var pending = plugins
        while !pending.isEmpty {
            let result = await run(PreflightRequest(environment: environment, cacheDirectory: cacheDirectory, plugins: pending,
                                                    secrets: secrets, checkOnly: checkOnly),
                                   timeoutSeconds: timeoutSeconds)
            for record in result.records { verdicts[record.name] = secrets.scrub(record) }
            guard let culprit = result.culprit else { break }
            for name in result.culprits {
                var record = verdicts[name] ?? PluginRecord(name: name, state: .failed)
                record.state = .failed
                record.error = culprit.error
                verdicts[name] = record
            }
            let rest = pending.filter { verdicts[$0.name] == nil }
            guard rest.count < pending.count else { break }
            pending = rest
        }
        return verdicts
    }

    static func signalName(_ sig: Int32) -> String {
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGFPE: "SIGFPE",
                                      SIGTRAP: "SIGTRAP", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL", SIGTERM: "SIGTERM",
                                      SIGINT: "SIGINT", SIGHUP: "SIGHUP", SIGPIPE: "SIGPIPE", SIGQUIT: "SIGQUIT",
                                      SIGSYS: "SIGSYS", SIGXCPU: "SIGXCPU", SIGUSR1: "SIGUSR1", SIGUSR2: "SIGUSR2"]
        return names[sig] ?? "signal \(sig)"
    }

    static func formatSeconds(_ s: Double) -> String {
        s == s.rounded() ? String(Int(s)) : String(s)
    }
}

/// One plain thread that runs submitted work in order, for the life of the process.
final class SpawnerThread: Sendable {
    private let jobs = LockedValueBox<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let started = LockedValueBox(false)

    func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        let start = started.withLock { s -> Bool in defer { s = true }; return !s }
        if start { startThread() }
        ready.signal()
    }

    private func startThread() {
        guard Threads.spawn({ [self] in loop() }) else {
            // No thread now: the next submit tries again, and this job runs on Dispatch's
            // pool, still off the cooperative one.
            started.withLock { $0 = false }
            if let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { DispatchQueue.global().async(execute: job) }
            return
        }
    }

    private func loop() {
        while true {
            ready.wait()
            let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            job?()
        }
    }
}
