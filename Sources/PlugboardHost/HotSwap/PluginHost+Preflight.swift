#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency

/// What a preflight found: a verdict for every plugin it got to and, for each isolated
/// plugin that passed, the supervisor whose first worker checked it.
struct PreflightOutcome: Sendable {
    var verdicts: [String: PluginRecord] = [:]
    /// Started and checked, not serving: a reload or a checked start hands each to its
    /// plugin's load (``PluginLoader/prepareIsolated(_:config:rank:wraps:requires:secrets:settings:checked:)``),
    /// so that the build is mapped once; whoever takes none stops them.
    var workers: [String: IsolatedPlugin] = [:]
}

extension PluginHost {
    /// Checks `candidates` (in load order) before anything of them is mapped here, each the
    /// way it will run:
    ///
    /// - an isolated plugin (``PreflightRequest/Plugin/worker``) by starting its first
    ///   worker: in its sandbox, alone in its container, loaded, registered, built, started
    ///   and health-checked, exactly as its supervisor starts one. What its sandbox refuses
    ///   refuses it, with the sandbox's code (``SandboxVerdict``). The worker is kept ready
    ///   for the load (``PreflightOutcome/workers``);
    /// - the other plugins in preflight children (``PreflightRunner/runAll(_:environment:cacheDirectory:timeoutSeconds:secrets:checkOnly:)``),
    ///   together with the isolated plugins that passed and that they require (a layer over
    ///   an isolated storage needs its provider in the child's container): those run there
    ///   unsandboxed, as a dependency only; their verdict is their worker's.
    ///
    /// A plugin whose requirement did not pass does not pass either, as in one child.
    static func preflight(_ candidates: [PreflightRequest.Plugin], loader: PluginLoader, runner: PreflightRunner,
                          environment: Environment, timeoutSeconds: Double, secrets: SecretScrubber,
                          checkOnly: Bool = false) async -> PreflightOutcome {
        var outcome = PreflightOutcome()
        let storageType = String(reflecting: (any ObjectStorage).self)
        let logger = loader.configuration.logger.with("component", "preflight")
        for candidate in candidates {
            guard let settings = candidate.worker else { continue }
            do throws(PlugboardError) {
                let plugin = try loader.isolatedPlugin(candidate.name, path: candidate.path, sha256: candidate.sha256, config: candidate.config,
                                                       rank: candidate.rank, wraps: candidate.wraps, secrets: secrets, settings: settings)
                let ready = try await plugin.startFirst()
                var record = PluginRecord(name: candidate.name, state: .active, version: ready.version.map { secrets.scrub($0) },
                                          sha256: candidate.sha256)
                record.services = ready.services.map { _ in storageType }
                outcome.verdicts[candidate.name] = record
                outcome.workers[candidate.name] = plugin
                logger.info("isolated plugin passed its preflight in its worker", metadata: [
                    "plugin": .string(candidate.name), "pid": .string(plugin.pid.map(String.init) ?? "-")])
            } catch {
                outcome.verdicts[candidate.name] = PluginRecord(name: candidate.name, state: .failed, sha256: candidate.sha256,
                                                                error: secrets.scrub(error))
            }
        }
        let byName = Dictionary(candidates.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var needed = Set<String>()
        var pending = candidates.filter { $0.worker == nil }.flatMap(\.requires)
        while let name = pending.popLast() {
            if needed.insert(name).inserted, let candidate = byName[name] { pending += candidate.requires }
        }
        let inChild = candidates.filter { $0.worker == nil || (needed.contains($0.name) && outcome.workers[$0.name] != nil) }
        if inChild.contains(where: { $0.worker == nil }) {
            let verdicts = await runner.runAll(inChild, environment: environment, cacheDirectory: loader.configuration.cacheDirectory,
                                               timeoutSeconds: timeoutSeconds, secrets: secrets, checkOnly: checkOnly)
            for (name, record) in verdicts where byName[name]?.worker == nil { outcome.verdicts[name] = record }
        }
        var blocked: [IsolatedPlugin] = []
        let outside = Set(candidates.flatMap(\.requires)).subtracting(byName.keys)
        await DependencyWalk<PreflightRequest.Plugin>(name: \.name, requires: \.requires).run(candidates, available: outside) { candidate in
            outcome.verdicts[candidate.name]?.state == .active
        } blocked: { candidate, blocker in
            // The child judged its own plugins so already; a worker's plugin is judged here.
            guard candidate.worker != nil, outcome.verdicts[candidate.name]?.state == .active else { return }
            if let worker = outcome.workers.removeValue(forKey: candidate.name) { blocked.append(worker) }
            outcome.verdicts[candidate.name]?.state = .failed
            outcome.verdicts[candidate.name]?.error = PreflightProbe.requirementFailed(candidate.name, blocker: blocker)
        }
        for worker in blocked { await worker.stop() }
        return outcome
    }

    /// Stops the workers of `outcome` nobody took.
    static func stopUnused(_ outcome: PreflightOutcome) async {
        for worker in outcome.workers.values { await worker.stop() }
    }

    /// `check`'s end of an isolated plugin's preflight: its worker is stopped as the host
    /// stops it, and a stop that crashes or exits otherwise than cleanly fails the plugin,
    /// as in a preflight child (stopping is plugin code too).
    static func stopChecked(_ outcome: inout PreflightOutcome) async {
        for (name, worker) in outcome.workers {
            let statuses = await worker.stop()
            guard let status = statuses.first else { continue }
            let (exit, signal) = ChildProcess.termination(status)
            let error: PlugboardError
            if let signal {
                error = PlugboardError(.preflightCrashed, "plugin \"\(name)\" crashed in preflight: \(PreflightRunner.signalName(signal))",
                    detail: "Its worker died of \(PreflightRunner.signalName(signal)) (signal \(signal)) while it stopped the plugin's services, or was killed when they did not stop within 10 s.",
                    hint: "Fix the plugin's stop(); run plugboard check --in-process in a scratch shell, or a debugger, to see where it crashes.")
            } else if let exit, exit != 0 {
                error = PlugboardError(.preflightExited, "plugin \"\(name)\" ended its worker with exit status \(exit) while it stopped",
                    detail: "The worker exited while the plugin's services stopped: the plugin calls exit (or _exit).",
                    hint: "A plugin must never end the process; return from stop() instead.")
            } else {
                continue
            }
            outcome.verdicts[name]?.state = .failed
            outcome.verdicts[name]?.error = error
        }
        outcome.workers.removeAll()
    }
}
