import PlugboardAPI
import PlugboardConcurrency

extension PluginHost {
    /// Whether hot swap is on for this run, whether the watchers run, and why not.
    public struct HotSwapMode: Sendable, Equatable {
        /// Reloads happen (on SIGHUP, `POST /v1/admin/reload`, and the watchers if on).
        public var enabled: Bool
        /// The manifest's folder and the plugin files' folders are watched.
        public var watching: Bool
        /// Why hot swap is off, for logs and the 409 answer.
        public var reason: String?
    }

    /// The rule: on when the manifest's `hotSwap.enabled` is true, or `serve --watch`;
    /// never in `production` unless `hotSwap.allowInProduction`. `--no-watch` turns off
    /// the watchers only.
    ///
    /// - Throws: `reload.watch_refused` when `--watch` is given in production without
    ///   `allowInProduction` (exit status 2: the command line asks for what the manifest
    ///   forbids).
    public static func hotSwapMode(_ settings: HotSwapSettings, environment: Environment,
                                   watchOverride: Bool?, manifestPath: String = "plugins.json") throws(PlugboardError) -> HotSwapMode {
        let asked = watchOverride == true || settings.enabled
        if environment == .production && !settings.allowInProduction {
            if watchOverride == true {
                throw PlugboardError(.watchRefused, "--watch is refused in the production environment",
                    detail: "The manifest's hotSwap.allowInProduction is false, so plugins are not swapped in production.",
                    hint: "Set \"hotSwap\": {\"enabled\": true, \"allowInProduction\": true} in \(manifestPath) if you mean it, or leave out --watch.")
            }
            return HotSwapMode(enabled: false, watching: false,
                               reason: asked ? "hot swap is off in production (hotSwap.allowInProduction is false)" : "hot swap is off (hotSwap.enabled is false)")
        }
        guard asked else { return HotSwapMode(enabled: false, watching: false, reason: "hot swap is off (hotSwap.enabled is false)") }
        return HotSwapMode(enabled: true, watching: watchOverride != false, reason: nil)
    }

    /// This run's mode, from the manifest running now.
    public var hotSwapMode: HotSwapMode {
        // A fleet host's manifest changes only through the fleet (a rollout's waves and
        // preflights, `fleet set`), which is its consent to reload in any environment.
        if configuration.fleetManaged { return HotSwapMode(enabled: true, watching: false, reason: nil) }
        return (try? Self.hotSwapMode(manifest.hotSwap, environment: environment, watchOverride: configuration.watchOverride,
                                      manifestPath: manifest.path))
            ?? HotSwapMode(enabled: false, watching: false, reason: "hot swap is off in production (hotSwap.allowInProduction is false)")
    }

    /// Reads the manifest again and applies what changed; returns how it went. Reloads run
    /// one at a time; one asked for while another runs waits for it and runs after.
    ///
    /// With hot swap off, refused at once with `reload.hot_swap_off` (not counted).
    public func reload(trigger: String) async -> ReloadOutcome {
        let mode = hotSwapMode
        guard mode.enabled else {
            return ReloadOutcome(result: .refused, trigger: trigger, generation: container.generation,
                                 error: PlugboardError(.hotSwapOff, "\(mode.reason ?? "hot swap is off"); restart to apply",
                                     hint: "Enable it with \"hotSwap\": {\"enabled\": true} in \(manifest.path) (or serve --watch), then restart plugboard serve."))
        }
        return await queue.run(trigger: trigger) { [self] t in await perform(trigger: t) }
    }

    /// A watched file changed: reload after `hotSwap.debounceMilliseconds` without
    /// further events.
    public func fileChanged() {
        // A reload may have turned hot swap off since the watchers started.
        let mode = hotSwapMode
        guard mode.enabled else {
            configuration.logger.notice("a watched file changed; \(mode.reason ?? "hot swap is off"); restart to apply")
            return
        }
        let debounce = manifest.hotSwap.debounceMilliseconds
        Task { await queue.changed(debounceMilliseconds: debounce) { [self] t in await perform(trigger: t) } }
    }

    /// One reload, recorded in the statistics, the events and the log.
    func perform(trigger: String) async -> ReloadOutcome {
        for observer in reloadStartObservers.withLock({ $0 }) { observer(trigger) }
        let started = MonotonicClock.now()
        let startedAt = Timestamp.now()
        var outcome: ReloadOutcome
        do throws(PlugboardError) {
            outcome = try await apply(trigger: trigger, startedAt: startedAt)
        } catch {
            outcome = ReloadOutcome(result: .refused, trigger: trigger, generation: container.generation, error: error,
                                    startedAt: startedAt)
        }
        outcome.durationSeconds = MonotonicClock.now() - started
        reloads.record(outcome)
        updateReadiness()
        for observer in reloadObservers.withLock({ $0 }) { observer(outcome) }
        let logger = configuration.logger.with("component", "hot-swap")
        let ms = String(Int((outcome.durationSeconds * 1000).rounded()))
        switch outcome.result {
        case .applied:
            events.emit("reload_applied", generation: outcome.generation,
                        message: "added [\(outcome.added.joined(separator: ", "))], changed [\(outcome.changed.joined(separator: ", "))], removed [\(outcome.removed.joined(separator: ", "))]")
            logger.notice("reload applied", metadata: [
                "trigger": .string(trigger), "generation": .string("\(outcome.generation)"), "ms": .string(ms),
                "added": .string(outcome.added.joined(separator: ",")), "changed": .string(outcome.changed.joined(separator: ",")),
                "removed": .string(outcome.removed.joined(separator: ","))])
        case .unchanged:
            events.emit("reload_unchanged", generation: outcome.generation)
            logger.info("reload: nothing changed", metadata: ["trigger": .string(trigger)])
        case .refused:
            events.emit("reload_refused", generation: outcome.generation, error: outcome.error)
            logger.error("reload refused; the running generation keeps serving", metadata: [
                "trigger": .string(trigger), "generation": .string("\(outcome.generation)"),
                "code": .string(outcome.error?.code.rawValue ?? "-"), "error": .string(outcome.error?.message ?? "-")])
        }
        return outcome
    }

    /// A reload: read the manifest, stage every selected plugin once, then do what
    /// ``ReloadStateMachine`` decides, step by step; a throw refuses it and leaves
    /// everything as it was.
    private func apply(trigger: String, startedAt: Timestamp) async throws(PlugboardError) -> ReloadOutcome {
        let current = state.withLock { $0 }
        let bytes = try ManifestFile.read(path: configuration.manifestPath, maxBytes: 1 << 20)
        let manifest = try configuration.checked(Manifest.parse(bytes: bytes, path: configuration.manifestPath))
        let digest = try Digest.sha256Hex(bytes)
        let selected = manifest.selectedPlugins(for: environment)
        let (configs, secrets) = try Self.resolvedConfigs(selected, configuration, s3Secrets: current.s3Secrets)
        // Reading, hashing and copying every plugin file blocks: off the cooperative pool.
        let searchPath = configuration.productSearchPath
        let stagings = await preflight.onReloadThread { [loader] in
            Self.stage(selected, trust: manifest.trust, searchPath: searchPath, loader: loader, previous: current.staged)
        }
        var machine = ReloadStateMachine(current: current, next: .init(manifest: manifest, digest: digest, environment: environment,
                                                                      configs: configs, secrets: secrets, stagings: stagings))
        var prepared: [String: PluginLoader.Prepared] = [:]
        // Isolated plugins' workers that passed the preflight, each handed to its plugin's load.
        var checked = PreflightOutcome()
        var action = machine.start()
        while true {
            switch action {
            case .finishUnchanged:
                return ReloadOutcome(result: .unchanged, trigger: trigger, generation: container.generation, startedAt: startedAt)
            case .refuse(let error):
                // Workers started for plugins this reload does not adopt end with it.
                for p in prepared.values { await p.record.worker?.stop() }
                await Self.stopUnused(checked)
                throw error
            case .preflight(let candidates):
                checked = await Self.preflight(candidates, loader: loader, runner: preflight, environment: environment,
                                               timeoutSeconds: manifest.hotSwap.preflightTimeoutSeconds, secrets: secrets)
                action = machine.preflightFinished(checked.verdicts)
            case .map(let load):
                let p: PluginLoader.Prepared
                if let settings = load.isolation.worker {
                    p = await loader.prepareIsolated(load.staged, config: load.config, rank: load.rank, wraps: load.wraps, requires: load.requires,
                                                     secrets: secrets, settings: settings,
                                                     checked: checked.workers.removeValue(forKey: load.staged.name))
                } else {
                    p = await preflight.onReloadThread { [loader] in
                        loader.prepare(load.staged, config: load.config, rank: load.rank, wraps: load.wraps, requires: load.requires,
                                       secrets: secrets)
                    }
                }
                prepared[load.staged.name] = p
                action = machine.mapped(p.record, registered: p.transaction != nil)
            case .commit(let retiring, let publishing):
                let removals = retiring.map { name -> Transaction in
                    let tx = container.makeTransaction(owner: name)
                    tx.unregisterAll()
                    return tx
                }
                let transactions = removals + publishing.compactMap { prepared[$0]?.transaction }
                if !transactions.isEmpty {
                    do throws(PlugboardError) {
                        try await container.commit(transactions, verify: true)
                    } catch {
                        action = machine.commitFailed(error)
                        continue
                    }
                }
                let activated = publishing.compactMap { name -> PluginRecord? in
                    guard var record = prepared[name]?.record else { return nil }
                    loader.activated(&record)
                    return record
                }
                action = machine.committed(generation: container.generation, activated: activated)
            case .adopt(let adoption):
                await Self.stopUnused(checked)
                return adopt(adoption, machine: machine, trigger: trigger, startedAt: startedAt)
            }
        }
    }

    /// Takes the new state, tells the events, and starts the drain.
    private func adopt(_ adoption: ReloadStateMachine.Adoption, machine: ReloadStateMachine, trigger: String,
                       startedAt: Timestamp) -> ReloadOutcome {
        let published = container.generation
        for record in adoption.loaded {
            events.emit("plugin_loaded", plugin: record.name, generation: published,
                        message: "version \(record.version ?? "?"), sha256 \(record.sha256?.prefix(12) ?? "?")")
        }
        for record in adoption.retired {
            events.emit("plugin_retired", plugin: record.name, generation: published,
                        message: "published in generation \(record.generation.map(String.init) ?? "?"), served through \(published - 1); its services stop once drained")
        }
        state.withLock { $0 = adoption.state }
        let hotSwap = adoption.state.manifest.hotSwap
        if let through = adoption.drainThrough { drain(through: through, timeoutSeconds: hotSwap.drainTimeoutSeconds) }
        warnAboutImages(limit: hotSwap.maxRetainedImages)
        var outcome = ReloadOutcome(result: adoption.outcome, trigger: trigger, generation: published, startedAt: startedAt)
        outcome.added = machine.plan.added
        outcome.changed = machine.plan.changed
        outcome.removed = machine.plan.removed
        outcome.retried = machine.plan.retry.sorted()
        return outcome
    }

    /// Stops the retired services once the last lease on an older generation ends, or at
    /// the drain timeout (a forced stop, logged). It waits on the container's events: every
    /// retired service handed to its stop is followed by a `stopped` event.
    private func drain(through generation: UInt64, timeoutSeconds: Double) {
        let logger = configuration.logger.with("component", "hot-swap")
        Task { [container, events] in
            let drained = await Self.retiredDrained(container, through: generation, timeoutSeconds: timeoutSeconds)
            let forced = drained ? 0 : await container.forceStopRetired(through: generation)
            if forced > 0 {
                let leases = container.outstandingLeases().filter { $0.key < generation }.values.reduce(0, +)
                events.emit("drain_forced", generation: generation,
                            message: "\(forced) retired service(s) stopped at the drain timeout (\(timeoutSeconds) s) with \(leases) lease(s) still open")
                logger.warning("drain timeout: retired services stopped with requests still in flight", metadata: [
                    "generation": .string("\(generation)"), "services": .string("\(forced)"), "leases": .string("\(leases)")])
            } else {
                await container.awaitPendingStops()
                events.emit("drained", generation: generation, message: "every retired service of earlier generations has stopped")
            }
        }
    }

    /// True once no managed service retired through `generation` waits for its drain;
    /// false at the timeout.
    static func retiredDrained(_ container: Container, through generation: UInt64, timeoutSeconds: Double) async -> Bool {
        // Subscribed before the first look, so that no stop falls between the two.
        let stream = container.events()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                if container.retiredServicesWaiting(through: generation) == 0 { return true }
                for await event in stream where event.kind == .stopped {
                    if container.retiredServicesWaiting(through: generation) == 0 { return true }
                }
                // The stream ended: the container shut down, and stopped everything.
                return container.retiredServicesWaiting(through: generation) == 0
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(max(0, timeoutSeconds) * 1e9))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Warns once for each image mapped beyond the limit, not on every reload.
    private func warnAboutImages(limit: Int) {
        let count = MappedImages.shared.count
        guard count > limit, imagesWarnedAt.withLock({ last in defer { last = max(last, count) }; return count > last }) else { return }
        configuration.logger.warning("\(count) plugin images are mapped, more than hotSwap.maxRetainedImages (\(limit)); images cannot be unmapped, so restart plugboard serve to release their memory",
                                     metadata: ["bytes": .string("\(MappedImages.shared.totalBytes)")])
    }
}
