import PlugboardAPI

/// A reload's decisions, kept apart from its work: the host tells it what each step found
/// and it answers what to do next, as SwiftNIO's typed HTTP upgrader state machines do.
///
/// It reads no file, maps nothing and touches no container, so every decision (what
/// changed, what a failure refuses, what may fail again, what is adopted) is tested
/// without `dlopen` (`ReloadStateMachineTests`). The host's driver
/// (`PluginHost.apply(trigger:startedAt:)`) does the work each action names: run a
/// preflight child, map a staged plugin, commit, adopt.
///
/// The steps, each of which can refuse the reload and leave everything as it was:
/// 1. ``init(current:next:)`` plans from what runs and what was staged; nothing changed
///    is `finishUnchanged`.
/// 2. ``start()``: a plugin the change adds or changes that could not be staged refuses;
///    one merely tried again may fail again. Then the preflight child, if anything loads.
/// 3. ``preflightFinished(_:)``: a changed plugin that did not pass refuses; a required
///    plugin that would not be active refuses. Then each passing plugin is mapped in the
///    host, in load order.
/// 4. ``mapped(_:)`` per plugin: one that passed its preflight but fails in the host
///    refuses. Then one commit of every removal and registration.
/// 5. ``committed(generation:activated:)`` or ``commitFailed(_:)``: adopt, or refuse.
struct ReloadStateMachine {
    /// What the reload read and staged: the new manifest, its plugins' configs, and every
    /// selected plugin's staging.
    struct Next {
        var manifest: Manifest
        var digest: String
        var environment: Environment
        var configs: [String: PluginConfig]
        var secrets: SecretScrubber
        var stagings: [String: StagingResult]

        var selected: [ManifestPlugin] { manifest.selectedPlugins(for: environment) }
    }

    /// A plugin to map and register in the host.
    struct Load: Sendable {
        var staged: StagedPlugin
        var config: PluginConfig
        var rank: Int
        /// The plugin whose providers its layers wrap, or nil.
        var wraps: String? = nil
        /// Its manifest entry's requirements, with what it wraps.
        var requires: [String]? = nil
        /// In the host, or in a worker process of its own (which then maps it instead).
        var isolation: PluginIsolation = .inProcess
    }

    /// What the host adopts once the commit is published.
    struct Adoption {
        var state: PluginHost.State
        /// `plugin_loaded` for each, in load order.
        var loaded: [PluginRecord]
        /// `plugin_retired` for each.
        var retired: [PluginRecord]
        /// The generation whose older services drain, if any plugin was retired.
        var drainThrough: UInt64?
        var outcome: Result
    }

    enum Action {
        /// Nothing to do: the manifest and every plugin file are what runs, and nothing
        /// failed that could be tried again.
        case finishUnchanged
        /// Check these staged plugins in a preflight child, in load order.
        case preflight([PreflightRequest.Plugin])
        /// Map and register this plugin in the host; report with ``mapped(_:)``.
        case map(Load)
        /// Remove the registrations of `retiring` and publish those mapped, as one
        /// generation; nothing to do when both are empty.
        case commit(retiring: [String], publishing: [String])
        /// Adopt this state and report.
        case adopt(Adoption)
        /// The reload is refused; the running generation keeps serving, whole.
        case refuse(PlugboardError)
    }

    /// The result an adoption reports: `applied`, or `unchanged` when only plugins that
    /// had failed were tried and failed again.
    typealias Result = ReloadOutcome.Result

    private enum Phase {
        case planned
        case preflighting
        case mapping(remaining: [Load])
        case committing
        case done
    }

    let current: PluginHost.State
    let next: Next
    let plan: ReloadPlan
    let fingerprints: [String: PluginFingerprint]
    private var phase: Phase = .planned
    /// Plugins tried again that failed again, with the record they keep.
    private var failedAgain: [String: PluginRecord] = [:]
    /// Plugins that passed their preflight, to map.
    private var passing: Set<String> = []
    /// Plugins mapped in the host, in load order.
    private(set) var mapped: [String] = []

    init(current: PluginHost.State, next: Next) {
        self.current = current
        self.next = next
        let selected = next.selected
        fingerprints = PluginFingerprint.all(selected, next.stagings, trust: next.manifest.trust)
        plan = ReloadPlan(selected: selected, next: fingerprints, current: current)
    }

    /// Whether the reload has anything to do; if not, `finishUnchanged`. Else what the
    /// staging of the plugins it loads decides: a refusal, or the preflight child.
    mutating func start() -> Action {
        guard case .planned = phase else { return misuse("start") }
        if next.digest == current.manifestDigest && fingerprints == current.fingerprints && plan.retry.isEmpty {
            phase = .done
            return .finishUnchanged
        }
        var candidates: [PreflightRequest.Plugin] = []
        for plugin in next.selected where plan.toLoad.contains(plugin.name) || plan.retry.contains(plugin.name)
            || plan.providers.contains(plugin.name) {
            let staging = next.stagings[plugin.name]
            if let staged = staging?.staged {
                var candidate = PreflightRequest.Plugin(staged, plugin, config: next.configs[plugin.name])
                // A provider the reload keeps is in the child only for the plugins that need
                // it: its own worker already serves, and is not checked again.
                if !plan.toLoad.contains(plugin.name) && !plan.retry.contains(plugin.name) { candidate.worker = nil }
                candidates.append(candidate)
                continue
            }
            let error = staging?.error ?? plan.locateError(plugin)
            // What the change adds or changes must stage; a retry may fail again.
            guard plan.retry.contains(plugin.name) else { return refuse(error) }
            failedAgain[plugin.name] = PluginRecord(name: plugin.name, state: .rejected, path: staging?.path, error: error)
        }
        guard !plan.toLoad.isEmpty || !plan.retry.isEmpty else { return checkRequiredThenMap() }
        phase = .preflighting
        return .preflight(candidates)
    }

    /// The child's verdicts (one per plugin it got to).
    mutating func preflightFinished(_ verdicts: [String: PluginRecord]) -> Action {
        guard case .preflighting = phase else { return misuse("preflightFinished") }
        for plugin in next.selected where plan.toLoad.contains(plugin.name) || plan.retry.contains(plugin.name) {
            guard let verdict = verdicts[plugin.name] ?? failedAgain[plugin.name] else { continue }
            if verdict.state == .active {
                passing.insert(plugin.name)
            } else if plan.toLoad.contains(plugin.name) {
                return refuse(verdict.error ?? PlugboardError(.preflightFailed, "plugin \"\(plugin.name)\" did not pass its preflight"))
            } else {
                var record = current.records.first { $0.name == plugin.name } ?? verdict
                record.state = verdict.state
                record.error = verdict.error
                failedAgain[plugin.name] = record
            }
        }
        return checkRequiredThenMap()
    }

    /// One plugin mapped in the host: `record` with a transaction to commit, or failed.
    mutating func mapped(_ record: PluginRecord, registered: Bool) -> Action {
        guard case .mapping(var remaining) = phase else { return misuse("mapped") }
        guard registered else {
            return refuse(PlugboardError(.loadFailed, underlying: record.error) {
                .init(message: "plugin \"\(record.name)\" passed its preflight but failed to load in the host: \(record.error?.message ?? "unknown error")",
                      detail: record.error.map { "\($0.code): \($0.message)" },
                      hint: "If its file changed during the reload, reload again; else see the plugin's error.")
            })
        }
        mapped.append(record.name)
        if remaining.isEmpty { return commit() }
        let load = remaining.removeFirst()
        phase = .mapping(remaining: remaining)
        return .map(load)
    }

    /// The commit failed: a build, start or health check is plugin code, so its error
    /// may carry a secret.
    mutating func commitFailed(_ error: PlugboardError) -> Action {
        guard case .committing = phase else { return misuse("commitFailed") }
        return refuse(next.secrets.scrub(error))
    }

    /// The commit published `generation` (the running one, when there was nothing to
    /// commit); `activated` holds the record of every plugin mapped, marked active.
    mutating func committed(generation published: UInt64, activated: [PluginRecord]) -> Action {
        guard case .committing = phase else { return misuse("committed") }
        phase = .done
        var loaded = failedAgain
        for record in activated { loaded[record.name] = record }
        var byName = PluginHost.unselectedRecords(next.manifest, next.environment)
        for plugin in next.selected {
            byName[plugin.name] = loaded[plugin.name] ?? current.records.first { $0.name == plugin.name }
        }
        var retired: [PluginRecord] = []
        for name in plan.retiring {
            guard var record = current.records.first(where: { $0.name == name }) else { continue }
            record.state = .retired
            retired.append(record)
        }
        var state = current
        state.manifest = next.manifest
        state.manifestDigest = next.digest
        state.records = next.manifest.plugins.compactMap { plugin in byName[plugin.name].map { var r = $0; r.isolation = plugin.isolation; return r } }
        state.fingerprints = fingerprints
        state.staged = PluginHost.activeStaged(next.stagings, state.records)
        state.secrets = next.secrets
        state.retired = Array((retired + current.retired).prefix(64))
        let nothingLoaded = activated.isEmpty && plan.retiring.isEmpty && next.digest == current.manifestDigest
        return .adopt(Adoption(state: state, loaded: activated, retired: retired,
                               drainThrough: plan.retiring.isEmpty ? nil : published,
                               outcome: nothingLoaded ? .unchanged : .applied))
    }

    // MARK: - Steps

    private mutating func checkRequiredThenMap() -> Action {
        let active = Set(current.records.filter { $0.state == .active }.map(\.name)).subtracting(plan.retiring).union(passing)
        let required = next.manifest.requiredPluginNames(for: next.environment)
        for plugin in next.manifest.plugins where required.contains(plugin.name) {
            guard !active.contains(plugin.name) else { continue }
            let record = current.records.first { $0.name == plugin.name }
            return refuse(PlugboardError(.requiredNotActive,
                "reload refused: required plugin \"\(plugin.name)\" would not be active",
                detail: "It is \(record?.state.description ?? "not loaded") now" +
                    (record?.error.map { " (\($0.code): \($0.message))" } ?? "") + ", and the reload does not make it active.",
                hint: "Fix the plugin (its file, config, requirements, or what it connects to) and reload again, or mark it \"required\": false."))
        }
        var loads: [Load] = []
        for plugin in next.selected where passing.contains(plugin.name) {
            guard let staged = next.stagings[plugin.name]?.staged else { continue }
            loads.append(Load(staged: staged, config: next.configs[plugin.name] ?? PluginConfig(plugin: plugin.name), rank: plugin.rank,
                              wraps: plugin.wraps, requires: plugin.dependencies, isolation: plugin.isolation))
        }
        guard !loads.isEmpty else { return commit() }
        let first = loads.removeFirst()
        phase = .mapping(remaining: loads)
        return .map(first)
    }

    private mutating func commit() -> Action {
        phase = .committing
        return .commit(retiring: plan.retiring, publishing: mapped)
    }

    private mutating func refuse(_ error: PlugboardError) -> Action {
        phase = .done
        return .refuse(error)
    }

    /// An event out of order is the driver's bug: refuse the reload rather than guess.
    private mutating func misuse(_ event: String) -> Action {
        phase = .done
        return .refuse(PlugboardError(.loadFailed, "reload refused: internal error (\(event) out of order)",
                                      hint: "Report this as a bug; the running generation keeps serving."))
    }
}
