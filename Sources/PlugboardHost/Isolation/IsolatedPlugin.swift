#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC

/// One isolated plugin's supervisor: its worker child, a warm spare, and what happens when
/// either dies (a signal, an exit, a hang, a broken protocol): the spare takes over at once
/// or a new worker starts, with backoff after the first restart, until too many crashes in
/// a window mark the plugin failed. Every crash is reported once, with the whole story.
///
/// The host's proxies (``IsolatedStorage``) call through ``worker()``; while no worker is
/// ready they fail with `storage.unavailable` (503 with `Retry-After`).
public final class IsolatedPlugin: Sendable {
    /// What the plugin is doing now.
    public enum Status: Sendable, Equatable {
        case starting
        case ready
        /// Its worker died and another is on its way.
        case restarting
        /// Too many crashes: no longer restarted (``IsolatedPlugin/failure``).
        case failed
        case stopped
    }

    /// One crash, as reported.
    public struct Crash: Sendable {
        public var time: Timestamp
        /// `signal`, `exit`, `hang`, `protocol`: the label of the restarts metric.
        public var reason: String
        public var message: String
    }

    /// One worker child: its process, its wire, what it registered.
    final class Worker: Sendable {
        let pid: pid_t
        let connection: WorkerConnection
        let ready: WorkerReady
        /// Why this side ended it, if it did (a hang, a protocol violation, a stop).
        let endedHere = LockedValueBox<String?>(nil)
        /// Whether its process has been reaped (with its wait status), and who waits for that.
        private let exit = LockedValueBox<(status: Int32?, waiters: [CheckedContinuation<Void, Never>])>((nil, []))

        init(pid: pid_t, connection: WorkerConnection, ready: WorkerReady) {
            self.pid = pid
            self.connection = connection
            self.ready = ready
        }

        /// Called by its reaper once the process is gone.
        func reaped(status: Int32) {
            let waiters = exit.withLock { e in
                e.status = status
                defer { e.waiters.removeAll() }
                return e.waiters
            }
            for w in waiters { w.resume() }
        }

        /// How the process ended, once it has.
        var status: Int32? { exit.withLock { $0.status } }

        /// Returns once the process is gone.
        func exited() async {
            await withCheckedContinuation { (go: CheckedContinuation<Void, Never>) in
                let now = exit.withLock { e -> Bool in
                    if e.status != nil { return true }
                    e.waiters.append(go)
                    return false
                }
                if now { go.resume() }
            }
        }

        /// Kills its whole process group: whatever the plugin started goes too.
        func kill(_ why: String) {
            endedHere.withLock { if $0 == nil { $0 = why } }
            _ = Glibc.kill(-pid, SIGKILL)
            connection.close()
        }
    }

    private struct State {
        var status: Status = .starting
        var current: Worker?
        var spare: Worker?
        var startingSpare = false
        var crashTimes: [Double] = []
        /// Crashes since a worker last answered a call: what the backoff grows with.
        var unserved = 0
        var crashes: [Crash] = []
        var restartsByReason: [String: Int] = [:]
        var failure: PlugboardError?
        /// Tasks waiting for a worker after theirs died (a retried read).
        var waiters: [CheckedContinuation<Worker?, Never>] = []
        /// Whether the plugin serves (its watchdog runs, it keeps a spare): not while only
        /// its first worker stands checked (``startFirst()``).
        var serving = false

        /// Counts `crash` (a worker that died, or one that could not start) against the
        /// crash-loop limit; `served` says the worker answered or died serving a call, which
        /// resets the backoff. Returns the crash loop's error when this crash is one too many.
        mutating func count(_ crash: Crash, served: Bool, plugin: String, settings: WorkerSettings) -> PlugboardError? {
            let now = MonotonicClock.now()
            crashTimes.append(now)
            crashTimes.removeAll { now - $0 > settings.crashWindowSeconds }
            crashes.append(crash)
            if crashes.count > 32 { crashes.removeFirst(crashes.count - 32) }
            restartsByReason[crash.reason, default: 0] += 1
            unserved = served ? 1 : unserved + 1
            guard crashTimes.count >= settings.maxCrashes else { return nil }
            let error = PlugboardError(.isolationCrashLoop,
                "plugin \"\(plugin)\"'s workers ended \(crashTimes.count) times within \(PreflightRunner.formatSeconds(settings.crashWindowSeconds)) s and it is no longer restarted",
                detail: "The last: \(crash.message).",
                hint: "Fix the plugin (its log lines and /v1/admin/plugins show each crash), then reload; or raise worker.maxCrashes.")
            failure = error
            status = .failed
            return error
        }

        /// Before the next start: none after a worker that served; then 0.1 s, doubled for
        /// each further worker that died idle before it answered (a crash loop, not a
        /// poisoned request), up to 5 s.
        var backoff: Double {
            unserved <= 1 ? 0 : min(5, 0.1 * Double(1 << min(unserved - 2, 6)))
        }
    }

    public let name: String
    public let settings: WorkerSettings
    /// The SHA-256 of the plugin's file, for crash reports.
    public let sha256: String
    let launcher: WorkerLauncher
    /// What each worker loads, and the sandbox it applies first.
    let load: WorkerLoad
    let logger: Logger
    /// Told of every crash (the host's events and records).
    let onCrash: @Sendable (Crash) -> Void
    /// Told of every system call the sandbox refused (the host's events).
    let onRefusal: @Sendable (String) -> Void
    /// For a layer: what its workers' calls to the storage below are served from.
    let wrapped: WrappedStorages?
    private let state = LockedValueBox(State())

    init(name: String, sha256: String, settings: WorkerSettings, launcher: WorkerLauncher, load: WorkerLoad, logger: Logger,
         onCrash: @escaping @Sendable (Crash) -> Void, onRefusal: @escaping @Sendable (String) -> Void,
         wrapped: WrappedStorages? = nil) {
        self.wrapped = wrapped
        self.name = name
        self.sha256 = sha256
        self.settings = settings
        self.launcher = launcher
        self.load = load
        self.onRefusal = onRefusal
        self.logger = logger.with("plugin", .string(name))
        self.onCrash = onCrash
    }

    public var status: Status { state.withLock { $0.status } }
    public var failure: PlugboardError? { state.withLock { $0.failure } }
    public var crashes: [Crash] { state.withLock { $0.crashes } }
    /// Restarts so far, by reason (`plugboard_plugin_restarts_total{plugin,reason}`).
    public var restarts: [String: Int] { state.withLock { $0.restartsByReason } }
    /// The serving worker's process id, if one is ready.
    public var pid: pid_t? { state.withLock { $0.current?.pid } }
    /// The spare's process id, if one is ready.
    public var sparePID: pid_t? { state.withLock { $0.spare?.pid } }
    /// What the serving worker said when it was ready.
    var firstReady: WorkerReady? { state.withLock { $0.current?.ready } }
    /// What the first worker registered.
    var services: [WorkerReady.Service] { state.withLock { $0.current?.ready.services ?? [] } }

    // MARK: Starting

    /// Starts the first worker and waits until its plugin is loaded and started; then a
    /// spare, in the background. Throws the plugin's own refusal (load, start, health), the
    /// sandbox's (`sandbox.*`), or the worker's failure.
    func start() async throws(PlugboardError) -> WorkerReady {
        let ready = try await startFirst()
        serve()
        return ready
    }

    /// An isolated plugin's preflight: its first worker, started as it will serve (in its
    /// sandbox, alone in its container: loaded, registered, built, started, health-checked),
    /// and nothing more: no spare, no watchdog. Then ``serve()`` makes that worker the
    /// plugin's (a reload hands it over, so the build is mapped once), or ``stop(grace:)``
    /// ends it (`check`, a refused reload).
    func startFirst() async throws(PlugboardError) -> WorkerReady {
        let worker = try await launch()
        state.withLock { s in
            s.current = worker
            s.status = .ready
        }
        return worker.ready
    }

    /// Serves with the worker ``startFirst()`` started: the watchdog, and a spare in the
    /// background. Once; later calls do nothing.
    func serve() {
        let (first, lost) = state.withLock { s -> (Bool, Bool) in
            defer { s.serving = true }
            // The first worker died before this (it was not replaced then): start another.
            let lost = s.current == nil && s.status != .stopped && s.status != .failed
            if lost && !s.serving { s.status = .restarting }
            return (!s.serving, lost)
        }
        guard first else { return }
        startWatchdog()
        if lost {
            Task { [self] in await replace() }
        } else {
            refillSpare()
        }
    }

    /// Whether this supervisor, checked by a preflight and not serving yet, may serve
    /// `load` under `settings`: only the very request its worker mapped (the staged copy's
    /// path and digest, the config, rank, environment, secrets, the sandbox policy) and
    /// only while that worker lives. A preflight's worker is never handed to anything else.
    func checked(for load: WorkerLoad, settings: WorkerSettings) -> Bool {
        guard settings == self.settings, load.encoded() == self.load.encoded() else { return false }
        return state.withLock { s in
            !s.serving && s.status == .ready && s.current.map { !$0.connection.hasEnded && $0.status == nil } == true
        }
    }

    /// Launches one worker and waits for its `ready`, within the start timeout.
    private func launch() async throws(PlugboardError) -> Worker {
        let (pid, transport): (pid_t, any FrameTransport)
        // What the sandbox refused until the worker is ready: the story of a start that fails.
        let refusals = SandboxRefusals()
        switch await launcher.launch() {
        case .success(let launched):
            (pid, transport) = (launched.pid, launched.transport)
            readReports(launched.reports, pid: pid, refusals: refusals)
        case .failure(let error): throw error
        }
        // The wire's end is not acted on here: the reaper tells why, once the process is gone.
        let connection = WorkerConnection(transport: transport, server: wrapped?.server(on: transport)) { _ in }
        guard connection.start() else {
            _ = Glibc.kill(-pid, SIGKILL)
            reap(pid)
            refusals.close()
            throw PlugboardError(.isolationWorkerFailed, "could not start a reader thread for plugin \"\(name)\"'s worker",
                                 hint: "The host is out of threads; lower its load or raise its limits.")
        }
        do throws(IPCError) {
            try transport.send(Frame(.load, payload: load.encoded()))
        } catch {
            _ = Glibc.kill(-pid, SIGKILL)
            reap(pid)
            refusals.close()
            throw PlugboardError(.isolationWorkerFailed, "could not send plugin \"\(name)\" to its worker: \(error)")
        }
        let timeout = settings.startTimeoutSeconds
        let timer = Task {
            try await Task.sleep(for: .seconds(timeout))
            _ = Glibc.kill(-pid, SIGKILL)
            connection.close()
        }
        let frame = await connection.ready()
        timer.cancel()
        guard let frame, let ready = try? WorkerReady.decode(frame.payload) else {
            _ = Glibc.kill(-pid, SIGKILL)
            let (status, peak) = await BlockingWork.run { Self.waitFor(pid) }
            let (exit, signal) = ChildProcess.termination(status)
            let how = signal.map { "died of \(PreflightRunner.signalName($0))" } ?? "exited with status \(exit ?? 0)"
            let error = PlugboardError(.isolationWorkerFailed, "plugin \"\(name)\"'s worker \(how) before it was ready",
                detail: frame == nil ? "Expected the worker's ready frame within \(PreflightRunner.formatSeconds(timeout)) s of its start; the plugin's load, registration or start ended the worker, hung past worker.startTimeoutSeconds, or the wire broke."
                    : "Expected a ready frame the host can read, found one it cannot.",
                hint: "Run plugboard check to try the same start (in its worker, sandboxed), and plugboard check --in-process to see it outside the sandbox; raise worker.startTimeoutSeconds if its start is only slow.")
            // Its report pipe ends with it: every refusal it wrote has been read.
            let refused = await refusals.all()
            throw SandboxVerdict(plugin: name, policy: load.sandbox).explain(error, refused: refused,
                                                                              signal: signal, peakBytes: frame == nil ? peak : nil)
        }
        if let failure = ready.failure {
            _ = Glibc.kill(-pid, SIGKILL)
            reap(pid)
            let refused = await refusals.all()
            throw SandboxVerdict(plugin: name, policy: load.sandbox).explain(failure, refused: refused, signal: nil, peakBytes: nil)
        }
        refusals.close()
        let worker = Worker(pid: pid, connection: connection, ready: ready)
        startReaper(worker)
        return worker
    }

    /// Reads the lines the worker's sandbox writes when it refuses a system call, for as
    /// long as the worker lives: each is logged and reported once.
    private func readReports(_ fd: Int32, pid: pid_t, refusals: SandboxRefusals) {
        let started = Threads.spawn { [self] in
            defer {
                close(fd)
                refusals.close()
            }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: 10) {
                    // Bounded: a worker cannot make the host hold a line without end.
                    let line = String(decoding: pending[..<newline].prefix(512), as: UTF8.self)
                    pending.removeSubrange(...newline)
                    refusals.add(line)
                    let message = "plugin \"\(name)\"'s worker (pid \(pid)): \(line)"
                    logger.error("isolated plugin's sandbox refused a system call", metadata: ["error": .string(message)])
                    onRefusal(message)
                }
                if pending.count > 4096 { pending.removeAll() }
            }
        }
        if !started {
            close(fd)
            refusals.close()
        }
    }

    // MARK: The worker for a call

    /// The worker to call now. `afterLoss`: a retried read whose worker died waits for the
    /// next one (a spare is at once); a new call does not wait.
    func worker(afterLoss: Bool = false) async throws(PlugboardError) -> Worker {
        enum Next { case now(Worker), wait, unavailable(PlugboardError) }
        let next: Next = state.withLock { s in
            if let current = s.current, !current.connection.hasEnded { return .now(current) }
            if let failure = s.failure { return .unavailable(Self.unavailable(failure)) }
            return afterLoss && s.status != .stopped ? .wait : .unavailable(restarting())
        }
        switch next {
        case .now(let worker): return worker
        case .unavailable(let error): throw error
        case .wait:
            let worker: Worker? = await withCheckedContinuation { go in
                let now: Worker?? = state.withLock { s in
                    if let current = s.current, !current.connection.hasEnded { return .some(current) }
                    if s.failure != nil || s.status == .stopped { return .some(nil) }
                    s.waiters.append(go)
                    return nil
                }
                if let now { go.resume(returning: now) }
            }
            guard let worker else { throw failure.map(Self.unavailable) ?? restarting() }
            return worker
        }
    }

    /// A failed plugin's storage answers as an unavailable one (503), with the failure's story.
    private static func unavailable(_ failure: PlugboardError) -> PlugboardError {
        PlugboardError(.storageUnavailable, failure.message, detail: failure.detail, hint: failure.hint)
    }

    private func restarting() -> PlugboardError {
        PlugboardError(.storageUnavailable, "plugin \"\(name)\" is restarting its worker process",
            detail: "Its worker ended and the next one is not ready yet; no request was lost that could not be retried.",
            hint: "Retry shortly (Retry-After). The host's log and /v1/admin/plugins say why the worker ended.")
    }

    // MARK: Crashes

    private func startReaper(_ worker: Worker) {
        let ok = Threads.spawn { [self] in
            let (status, _) = Self.waitFor(worker.pid)
            // Whatever it started dies with it.
            _ = Glibc.kill(-worker.pid, SIGKILL)
            worker.connection.close()
            ended(worker, status: status)
            worker.reaped(status: status)
        }
        if !ok { worker.kill("no thread to watch it") }
    }

    /// Reaps `pid`: its wait status and its peak resident memory in bytes (which tells a
    /// worker that died at its memory limit).
    private static func waitFor(_ pid: pid_t) -> (status: Int32, peakBytes: UInt64) {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            if errno != EINTR { return (0, 0) }
        }
        return (status, UInt64(max(0, usage.ru_maxrss)) * 1024)
    }

    private func reap(_ pid: pid_t) {
        _ = Threads.spawn { _ = Self.waitFor(pid) }
    }

    /// A worker's process is gone: report it unless this side stopped it, and replace it.
    private func ended(_ worker: Worker, status: Int32) {
        let why = worker.endedHere.withLock { $0 }
        let stopping = state.withLock { $0.status == .stopped }
        if stopping || why == "stop" {
            state.withLock { s in
                if s.current === worker { s.current = nil }
                if s.spare === worker { s.spare = nil }
            }
            return
        }
        let (exit, signal) = ChildProcess.termination(status)
        let reason: String
        var how: String
        if let why, why != "stop" {
            reason = why.hasPrefix("hung") ? "hang" : "protocol"
            how = why
        } else if let signal {
            reason = "signal"
            how = "died of \(PreflightRunner.signalName(signal)) (signal \(signal))"
            if signal == SIGSYS { how += ": the sandbox stopped a forbidden system call" }
        } else {
            reason = "exit"
            how = "exited with status \(exit ?? 0)"
        }
        let inFlight = worker.connection.inFlight
        let serving = inFlight.isEmpty ? "no request in flight"
            : "serving " + inFlight.prefix(5).map(\.summary).joined(separator: ", ") + (inFlight.count > 5 ? " and \(inFlight.count - 5) more" : "")
        enum Next { case promoted, relaunch(delay: Double), failed(PlugboardError), nothing }
        var waiters: [CheckedContinuation<Worker?, Never>] = []
        let wasSpare = state.withLock { $0.spare === worker }
        let crash = Crash(time: .now(), reason: reason,
                          message: "plugin \"\(name)\"'s \(wasSpare ? "spare " : "")worker (pid \(worker.pid)) \(how), \(serving)")
        let next: Next = state.withLock { s in
            guard s.spare === worker || s.current === worker else { return .nothing }
            if s.spare === worker { s.spare = nil } else { s.current = nil }
            // A preflight's worker that dies before it serves is not replaced: its verdict
            // no longer holds, so no load takes this supervisor (checked(for:settings:)).
            guard s.serving else { return .nothing }
            // A worker that answered, or died serving a call (a poisoned request), is no
            // crash loop; one that died idle before it answered anything is.
            if let error = s.count(crash, served: worker.connection.answered > 0 || !inFlight.isEmpty, plugin: name, settings: settings) {
                waiters = s.waiters
                s.waiters.removeAll()
                return .failed(error)
            }
            if s.current == nil, let spare = s.spare {
                s.current = spare
                s.spare = nil
                s.status = .ready
                waiters = s.waiters
                s.waiters.removeAll()
                return .promoted
            }
            if s.current == nil { s.status = .restarting }
            return .relaunch(delay: s.backoff)
        }
        logger.error("isolated plugin's worker ended", metadata: [
            "reason": .string(reason), "error": .string(crash.message), "sha256": .string(String(sha256.prefix(12)))])
        onCrash(crash)
        switch next {
        case .nothing: return
        case .failed(let error):
            logger.error("isolated plugin failed", metadata: ["error": .string(error.message)])
            let spare = state.withLock { s in defer { s.spare = nil }; return s.spare }
            spare?.kill("stop")
            for w in waiters { w.resume(returning: nil) }
        case .promoted:
            for w in waiters { w.resume(returning: state.withLock { $0.current }) }
            refillSpare()
        case .relaunch(let delay):
            Task { [self] in
                if delay > 0 { try? await Task.sleep(for: .seconds(delay)) }
                await replace()
            }
        }
    }

    /// Starts a worker to serve (when none does) or to stand by as the spare.
    private func replace() async {
        guard state.withLock({ $0.status != .stopped && $0.status != .failed }) else { return }
        do throws(PlugboardError) {
            let worker = try await launch()
            var waiters: [CheckedContinuation<Worker?, Never>] = []
            let kept: Bool = state.withLock { s in
                guard s.status != .stopped, s.status != .failed else { return false }
                if s.current == nil {
                    s.current = worker
                    s.status = .ready
                    waiters = s.waiters
                    s.waiters.removeAll()
                } else if s.spare == nil && settings.spare {
                    s.spare = worker
                } else {
                    return false
                }
                return true
            }
            if !kept { worker.kill("stop") }
            for w in waiters { w.resume(returning: worker) }
            refillSpare()
        } catch {
            // A worker that cannot even start counts as a crash of the plugin.
            let crash = Crash(time: .now(), reason: "start", message: error.message)
            logger.error("isolated plugin's worker did not start", metadata: ["error": .string(error.message)])
            onCrash(crash)
            let retry: Double? = state.withLock { s in
                s.count(crash, served: false, plugin: name, settings: settings) == nil ? s.backoff : nil
            }
            if let retry {
                try? await Task.sleep(for: .seconds(retry))
                await replace()
            } else {
                let waiters = state.withLock { s in defer { s.waiters.removeAll() }; return s.waiters }
                for w in waiters { w.resume(returning: nil) }
            }
        }
    }

    private func refillSpare() {
        guard settings.spare else { return }
        let start = state.withLock { s -> Bool in
            guard s.serving, s.spare == nil, !s.startingSpare, s.status == .ready else { return false }
            s.startingSpare = true
            return true
        }
        guard start else { return }
        Task { [self] in
            await replace()
            state.withLock { $0.startingSpare = false }
        }
    }

    // MARK: The watchdog

    /// Pings the workers and kills one whose call or whose ping has not moved for the call
    /// timeout: a plugin that hangs on one key would otherwise hold its requests for ever.
    /// Two threads: a send waits while a worker that stopped reading has its ring full, so
    /// the thread that judges and kills never sends.
    private func startWatchdog() {
        let tick = UInt32(min(250_000, settings.callTimeoutSeconds * 250_000))
        _ = Threads.spawn { [weak self] in
            while let self, self.status != .stopped, self.status != .failed {
                for worker in self.workers { worker.connection.ping() }
                usleep(tick)
            }
        }
        _ = Threads.spawn { [weak self] in
            while let self, self.status != .stopped, self.status != .failed {
                let limit = self.settings.callTimeoutSeconds
                for worker in self.workers {
                    if worker.connection.unansweredFor > limit {
                        worker.kill("hung: it answered no ping for \(PreflightRunner.formatSeconds(limit)) s (worker.callTimeoutSeconds)")
                    } else if let (call, seconds) = worker.connection.stalest(), seconds > limit {
                        worker.kill("hung: \(call.summary) made no progress for \(PreflightRunner.formatSeconds(limit)) s (worker.callTimeoutSeconds)")
                    }
                }
                usleep(tick)
            }
        }
    }

    /// The serving worker and the spare, as they are now.
    private var workers: [Worker] {
        state.withLock { [$0.current, $0.spare].compactMap { $0 } }
    }

    /// The serving worker sent what the protocol does not allow: it is killed and replaced.
    func protocolViolation(_ error: IPCError) {
        state.withLock { $0.current }?.kill("sent an answer the host cannot read (\(error))")
    }

    // MARK: Stopping

    /// Stops the plugin: each worker is asked to stop its services and end, and killed with
    /// its group if it has not within `grace` seconds. Returns how each ended (its wait
    /// status), the serving worker's first.
    @discardableResult
    func stop(grace: Double = 10) async -> [Int32] {
        let (workers, waiters): ([Worker], [CheckedContinuation<Worker?, Never>]) = state.withLock { s in
            s.status = .stopped
            defer { s.waiters.removeAll() }
            return ([s.current, s.spare].compactMap { $0 }, s.waiters)
        }
        for w in waiters { w.resume(returning: nil) }
        for worker in workers {
            worker.endedHere.withLock { if $0 == nil { $0 = "stop" } }
            // On a thread of its own: a send waits while a worker that stopped reading has
            // its ring full, and the grace below must run whatever it does.
            if !Threads.spawn({ try? worker.connection.send(Frame(.stop)) }) { worker.kill("stop") }
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(grace))
            for worker in workers { worker.kill("stop") }
        }
        for worker in workers { await worker.exited() }
        deadline.cancel()
        return workers.compactMap(\.status)
    }
}
