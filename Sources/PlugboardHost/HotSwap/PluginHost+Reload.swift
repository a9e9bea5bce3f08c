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
                                   watchOverride: Bool?) throws(PlugboardError) -> HotSwapMode {
        let asked = watchOverride == true || settings.enabled
        if environment == .production && !settings.allowInProduction {
            if watchOverride == true {
                throw PlugboardError(.watchRefused, "--watch is refused in the production environment",
                    detail: "The manifest's hotSwap.allowInProduction is false, so plugins are not swapped in production.",
                    hint: "Set \"hotSwap\": {\"enabled\": true, \"allowInProduction\": true} in plugins.json if you mean it, or leave out --watch.")
            }
            return HotSwapMode(enabled: false, watching: false,
                               reason: asked ? "hot swap is off in production (hotSwap.allowInProduction is false)" : "hot swap is off (hotSwap.enabled is false)")
        }
        guard asked else { return HotSwapMode(enabled: false, watching: false, reason: "hot swap is off (hotSwap.enabled is false)") }
        return HotSwapMode(enabled: true, watching: watchOverride != false, reason: nil)
    }

    /// This run's mode, from the manifest running now.
    public var hotSwapMode: HotSwapMode {
        (try? Self.hotSwapMode(manifest.hotSwap, environment: environment, watchOverride: configuration.watchOverride))
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
                                     hint: "Enable it with \"hotSwap\": {\"enabled\": true} in plugins.json (or serve --watch), then restart plugboard serve."))
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
        let started = Clock.now()
        let startedAt = Timestamp.now()
        var outcome: ReloadOutcome
        do throws(PlugboardError) {
            outcome = try await apply(trigger: trigger, startedAt: startedAt)
        } catch {
            outcome = ReloadOutcome(result: .refused, trigger: trigger, generation: container.generation, error: error,
                                    startedAt: startedAt)
        }
        outcome.durationSeconds = Clock.now() - started
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

    /// The steps of a reload; a throw refuses it and leaves everything as it was.
    private func apply(trigger: String, startedAt: Timestamp) async throws(PlugboardError) -> ReloadOutcome {
        let current = state.withLock { $0 }
        let bytes = try ManifestFile.read(path: configuration.manifestPath, maxBytes: 1 << 20)
        let manifest = try Manifest.parse(bytes: bytes, path: configuration.manifestPath)
        let digest = try Digest.sha256Hex(bytes)
        let selected = manifest.selectedPlugins(for: environment)
        let (configs, secrets) = try Self.resolvedConfigs(selected, configuration, s3Secrets: current.s3Secrets)
        // Reading and hashing every plugin file blocks: off the cooperative pool.
        let searchPath = configuration.productSearchPath
        var next = await preflight.onReloadThread {
            Dictionary(selected.map { plugin in
                (plugin.name, PluginFingerprint(plugin, located: Self.locate(plugin.source, plugin: plugin.name, searchPath: searchPath),
                                                reading: true))
            }, uniquingKeysWith: { a, _ in a })
        }
        let plan = ReloadPlan(selected: selected, next: next, current: current)
        if digest == current.manifestDigest && next == current.fingerprints && plan.retry.isEmpty {
            return ReloadOutcome(result: .unchanged, trigger: trigger, generation: container.generation, startedAt: startedAt)
        }

        // Stage every plugin the reload loads (and the unchanged providers they need in the
        // preflight child) into the cache; the child checks those very bytes. A plugin that
        // the change adds or changes must pass every step, or the reload is refused; one
        // that had failed and is merely tried again may fail again and stay failed.
        var failedAgain: [String: PluginRecord] = [:]
        var staged: [String: (inspection: PluginInspection, loadPath: String)] = [:]
        for plugin in selected where plan.toLoad.contains(plugin.name) || plan.retry.contains(plugin.name) || plan.providers.contains(plugin.name) {
            do throws(PlugboardError) {
                guard let path = next[plugin.name]?.path else {
                    throw plan.locateError(plugin, searchPath: configuration.productSearchPath)
                }
                let loader = loader
                staged[plugin.name] = try await preflight.onReloadThread { () throws(PlugboardError) in
                    try loader.stageOnly(path: path, name: plugin.name, pin: plugin.sha256)
                }
            } catch {
                guard plan.retry.contains(plugin.name) else { throw error }
                failedAgain[plugin.name] = PluginRecord(name: plugin.name, state: .rejected, path: next[plugin.name]?.path, error: error)
            }
        }
        let candidates = selected.compactMap { plugin in
            staged[plugin.name].map { s in
                PreflightRequest.Plugin(name: plugin.name, path: s.loadPath, sha256: s.inspection.sha256, rank: plugin.rank,
                                        config: configs[plugin.name] ?? PluginConfig(plugin: plugin.name), requires: plugin.requires)
            }
        }
        var passing = Set<String>()
        if !plan.toLoad.isEmpty || !plan.retry.isEmpty {
            let verdicts = await preflight.runAll(candidates, environment: environment, cacheDirectory: loader.configuration.cacheDirectory,
                                                  timeoutSeconds: manifest.hotSwap.preflightTimeoutSeconds, secrets: secrets)
            for plugin in selected where plan.toLoad.contains(plugin.name) || plan.retry.contains(plugin.name) {
                guard let verdict = verdicts[plugin.name] ?? failedAgain[plugin.name] else { continue }
                if verdict.state == .active {
                    passing.insert(plugin.name)
                } else if plan.toLoad.contains(plugin.name) {
                    throw verdict.error ?? PlugboardError(.preflightFailed, "plugin \"\(plugin.name)\" did not pass its preflight")
                } else {
                    var record = current.records.first { $0.name == plugin.name } ?? verdict
                    record.state = verdict.state
                    record.error = verdict.error
                    failedAgain[plugin.name] = record
                }
            }
        }
        try checkRequired(manifest, active: Set(current.records.filter { $0.state == .active }.map(\.name))
                              .subtracting(plan.retiring).union(passing))

        // Map and register in the host, then commit every removal and registration as one
        // generation.
        var prepared: [PluginLoader.Prepared] = []
        for plugin in selected where passing.contains(plugin.name) {
            guard let s = staged[plugin.name] else { continue }
            let request = PluginLoader.Request(name: plugin.name, path: s.inspection.path, sha256: s.inspection.sha256,
                                               config: configs[plugin.name], rank: plugin.rank, secrets: secrets)
            let p = await preflight.onReloadThread { [loader] in loader.prepare(request) }
            guard p.transaction != nil else {
                throw PlugboardError(.loadFailed, underlying: p.record.error) {
                    .init(message: "plugin \"\(plugin.name)\" passed its preflight but failed to load in the host: \(p.record.error?.message ?? "unknown error")",
                          detail: p.record.error.map { "\($0.code): \($0.message)" },
                          hint: "If its file changed during the reload, reload again; else see the plugin's error.")
                }
            }
            prepared.append(p)
        }
        let removals = plan.retiring.map { name -> Transaction in
            let tx = container.makeTransaction(owner: name)
            tx.unregisterAll()
            return tx
        }
        if !removals.isEmpty || !prepared.isEmpty {
            do throws(PlugboardError) {
                try await container.commit(removals + prepared.compactMap(\.transaction), verify: true)
            } catch {
                // Builds, starts and health checks are plugin code.
                throw secrets.scrub(error)
            }
        }
        let published = container.generation

        // Adopt the new state.
        var loaded: [String: PluginRecord] = failedAgain
        for var p in prepared {
            loader.activated(&p.record)
            loaded[p.record.name] = p.record
            events.emit("plugin_loaded", plugin: p.record.name, generation: published,
                        message: "version \(p.record.version ?? "?"), sha256 \(p.record.sha256?.prefix(12) ?? "?")")
        }
        var byName = Self.unselectedRecords(manifest, environment)
        for plugin in selected {
            byName[plugin.name] = loaded[plugin.name] ?? current.records.first { $0.name == plugin.name }
        }
        var retired: [PluginRecord] = []
        for name in plan.retiring {
            guard var record = current.records.first(where: { $0.name == name }) else { continue }
            record.state = .retired
            retired.append(record)
            events.emit("plugin_retired", plugin: name, generation: published,
                        message: "published in generation \(record.generation.map(String.init) ?? "?"), served through \(published - 1); its services stop once drained")
        }
        for (name, s) in staged where passing.contains(name) { next[name]?.sha256 = s.inspection.sha256 }
        state.withLock { st in
            st.manifest = manifest
            st.manifestDigest = digest
            st.records = manifest.plugins.compactMap { byName[$0.name] }
            st.fingerprints = next
            st.secrets = secrets
            st.retired = Array((retired + st.retired).prefix(64))
        }
        if !plan.retiring.isEmpty { drain(through: published, timeoutSeconds: manifest.hotSwap.drainTimeoutSeconds) }
        warnAboutImages(limit: manifest.hotSwap.maxRetainedImages)
        // Only failed plugins were tried again, and they failed again: nothing changed.
        let result: ReloadOutcome.Result = prepared.isEmpty && removals.isEmpty && digest == current.manifestDigest ? .unchanged : .applied
        var outcome = ReloadOutcome(result: result, trigger: trigger, generation: published, startedAt: startedAt)
        outcome.added = plan.added
        outcome.changed = plan.changed
        outcome.removed = plan.removed
        outcome.retried = plan.retry.sorted()
        return outcome
    }

    /// A reload that would leave a required plugin not active is refused (`active`: the
    /// plugins that will be active once it is applied).
    private func checkRequired(_ manifest: Manifest, active: Set<String>) throws(PlugboardError) {
        let records = records
        for plugin in manifest.plugins where plugin.required && plugin.selection(for: environment) == .selected {
            guard !active.contains(plugin.name) else { continue }
            let record = records.first { $0.name == plugin.name }
            throw PlugboardError(.requiredNotActive,
                "reload refused: required plugin \"\(plugin.name)\" would not be active",
                detail: "It is \(record?.state.description ?? "not loaded") now" +
                    (record?.error.map { " (\($0.code): \($0.message))" } ?? "") + ", and the reload does not make it active.",
                hint: "Fix the plugin (its file, config, requirements, or what it connects to) and reload again, or mark it \"required\": false.")
        }
    }

    /// Stops the retired services once the last lease on an older generation ends, or at
    /// the drain timeout (a forced stop, logged).
    private func drain(through generation: UInt64, timeoutSeconds: Double) {
        let logger = configuration.logger.with("component", "hot-swap")
        Task { [container, events] in
            let deadline = Clock.now() + timeoutSeconds
            while container.retiredServicesWaiting(through: generation) > 0 && Clock.now() < deadline {
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
            let forced = await container.forceStopRetired(through: generation)
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

    /// Warns once for each image mapped beyond the limit, not on every reload.
    private func warnAboutImages(limit: Int) {
        let count = MappedImages.shared.count
        guard count > limit, imagesWarnedAt.withLock({ last in defer { last = max(last, count) }; return count > last }) else { return }
        configuration.logger.warning("\(count) plugin images are mapped, more than hotSwap.maxRetainedImages (\(limit)); images cannot be unmapped, so restart plugboard serve to release their memory",
                                     metadata: ["bytes": .string("\(MappedImages.shared.totalBytes)")])
    }
}

/// What a reload changes, worked out from the running plugins and the new manifest.
struct ReloadPlan {
    /// Selected now, not before.
    var added: [String] = []
    /// Selected before and now, loaded from another file, bytes, config, rank or
    /// requirements, or requiring (transitively) a plugin that is.
    var changed: [String] = []
    /// Selected before, not now.
    var removed: [String] = []
    /// The plugins to load: added and changed, in load order.
    var toLoad: Set<String> = []
    /// Unchanged active plugins that a plugin to load requires: loaded beside it in the
    /// preflight child.
    var providers: Set<String> = []
    /// Active plugins whose registrations the commit removes.
    var retiring: [String] = []
    /// Plugins unchanged since they failed or were rejected: tried again on every reload
    /// (what they need may have come back), and allowed to fail again.
    var retry: Set<String> = []

    init(selected: [ManifestPlugin], next: [String: PluginFingerprint], current: PluginHost.State) {
        let before = current.fingerprints
        let active = Set(current.records.filter { $0.state == .active }.map(\.name))
        removed = current.records.map(\.name).filter { before[$0] != nil && next[$0] == nil }
        var dirty = Set(removed)
        for plugin in selected {
            if before[plugin.name] == nil {
                added.append(plugin.name)
            } else if before[plugin.name] != next[plugin.name] {
                dirty.insert(plugin.name)
            }
        }
        // A plugin requiring a changed or removed one was built from it: reload it too.
        var grew = true
        while grew {
            grew = false
            for plugin in selected where !dirty.contains(plugin.name) && plugin.requires.contains(where: dirty.contains) {
                dirty.insert(plugin.name)
                grew = true
            }
        }
        for plugin in selected where dirty.contains(plugin.name) && before[plugin.name] != nil { changed.append(plugin.name) }
        toLoad = Set(added + changed)
        let failed = Set(current.records.filter { $0.state == .failed || $0.state == .rejected }.map(\.name))
        retry = Set(selected.map(\.name).filter { failed.contains($0) && !toLoad.contains($0) && next[$0]?.path != nil })
        retiring = current.records.map(\.name).filter { active.contains($0) && (dirty.contains($0) || removed.contains($0)) }
        let byName = Dictionary(selected.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var stack = selected.filter { toLoad.contains($0.name) }.flatMap(\.requires)
        while let name = stack.popLast() {
            guard !toLoad.contains(name), !providers.contains(name), active.contains(name), let p = byName[name] else { continue }
            providers.insert(name)
            stack += p.requires
        }
    }

    func locateError(_ plugin: ManifestPlugin, searchPath: [String]) -> PlugboardError {
        if case .failure(let error) = PluginHost.locate(plugin.source, plugin: plugin.name, searchPath: searchPath) { return error }
        return PlugboardError(.loadFailed, "could not locate the file of plugin \"\(plugin.name)\"")
    }
}
