#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import CPlugboardSystem
import PlugboardJSON
import Synchronization

/// The host: a container, the manifest, and the plugins the manifest selects for the
/// environment, loaded in `requires` order; with hot swap on, it reloads the manifest
/// while it serves (``reload(trigger:)``).
///
/// ```swift
/// let host = try await PluginHost.start(PluginHost.Configuration(manifestPath: "plugins.json"))
/// let storage: any ObjectStorage = try host.container.resolve()
/// ```
public final class PluginHost: Sendable {
    /// How the host is set up; the CLI builds it from flags and the process environment.
    public struct Configuration: Sendable {
        /// The manifest to read.
        public var manifestPath: String
        /// The environment to run in; nil for the manifest's `environment`, else
        /// `development`.
        public var environment: Environment?
        /// The plugin cache; nil for `$XDG_CACHE_HOME/plugboard` or `~/.cache/plugboard`.
        public var cacheDirectory: String?
        /// The process environment, captured once (``ProcessEnvironmentSnapshot``): `${VAR}`
        /// expansion and `PLUGBOARD_PLUGIN_PATH` read it, every plugin is given it
        /// (``PluginRegistrar/processEnvironment``), and it is the whole environment of the
        /// preflight children; nothing reads the environment on its own. Empty by default:
        /// a host embedded without it gives its children and plugins no variable at all.
        public var processEnvironment: [String: String]
        /// Folders searched for `product` plugins, in order: by default the running
        /// executable's folder, then `PLUGBOARD_PLUGIN_PATH`'s.
        public var productSearchPath: [String]
        public var logger: Logger
        /// `serve --watch` (true) or `--no-watch` (false); nil follows the manifest.
        public var watchOverride: Bool?
        /// The `plugboard` executable that runs preflight children; nil for the running
        /// executable.
        public var preflightExecutable: String?
        /// The level of the line logged when a plugin fails or is rejected (see
        /// ``PluginLoader/Configuration/failureLogLevel``): lower it where the caller
        /// reports every plugin's state itself.
        public var pluginFailureLogLevel: Logger.Level = .error
        /// Rules of other modules about a manifest's sections (the S3 front end's `s3`,
        /// which PlugboardHost cannot know): run on every manifest read, at start, by
        /// `check` and by every reload, right after the manifest's own checks, and refused
        /// as those are.
        public var manifestRules: [@Sendable (Manifest) throws(PlugboardError) -> Void] = []
        /// Arguments the preflight child gets after `preflight --parent-pid PID`: what it
        /// must do as this process does (the CLI passes its `--log-format`). Its
        /// environment is ``processEnvironment``, and nothing else.
        public var preflightArguments: [String] = []
        /// `serve --fleet`: the manifest at ``manifestPath`` is written by the fleet agent,
        /// which reloads after each write; hot swap is on (reloads, no watchers) whatever
        /// the manifest and the environment say (docs/FLEET.md).
        public var fleetManaged = false
        /// `plugboard check`: the plugins are loaded only to be checked, and told so
        /// (``PluginRegistrar/checkOnly``), so that their starts create nothing; in a
        /// preflight child (``preflightCheck(_:)``) or in this process.
        public var checkOnly = false

        public init(manifestPath: String, environment: Environment? = nil, cacheDirectory: String? = nil,
                    processEnvironment: [String: String] = [:], productSearchPath: [String]? = nil,
                    logger: Logger = .disabled, watchOverride: Bool? = nil, preflightExecutable: String? = nil) {
            self.manifestPath = manifestPath
            self.environment = environment
            self.cacheDirectory = cacheDirectory
            self.processEnvironment = processEnvironment
            self.productSearchPath = productSearchPath ?? Self.defaultSearchPath(processEnvironment)
            self.logger = logger
            self.watchOverride = watchOverride
            self.preflightExecutable = preflightExecutable
        }

        /// `manifest`, once every one of ``manifestRules`` has passed it.
        func checked(_ manifest: Manifest) throws(PlugboardError) -> Manifest {
            for rule in manifestRules { try rule(manifest) }
            return manifest
        }

        /// The `plugboard` executable its children run: ``preflightExecutable``, else this one.
        var childExecutable: String {
            preflightExecutable ?? PluginFile.realPath("/proc/self/exe") ?? "/proc/self/exe"
        }

        /// How this host starts isolated plugins' workers: the same executable, environment
        /// and arguments as its preflight children.
        var workerLauncher: WorkerLauncher {
            WorkerLauncher(executable: childExecutable, environment: processEnvironment, arguments: preflightArguments)
        }

        /// The runner of this host's preflight children.
        var preflightRunner: PreflightRunner {
            let executable = childExecutable
            return PreflightRunner(executable: executable, environment: processEnvironment, arguments: preflightArguments,
                                   logger: logger, manifestPath: manifestPath)
        }

        /// The running executable's folder, then `PLUGBOARD_PLUGIN_PATH`'s folders.
        public static func defaultSearchPath(_ environment: [String: String]) -> [String] {
            var out: [String] = []
            if let exe = PluginFile.realPath("/proc/self/exe") { out.append(PluginFile.parentFolder(exe)) }
            if let extra = environment["PLUGBOARD_PLUGIN_PATH"] {
                out += extra.split(separator: ":").map(String.init).filter { !$0.isEmpty }
            }
            return out
        }
    }

    /// What the host runs now; replaced whole by each applied reload.
    struct State: Sendable {
        var manifest: Manifest
        /// SHA-256 of the manifest's bytes, to tell an unchanged rewrite.
        var manifestDigest: String
        /// Every plugin of the manifest, in manifest order, with its state.
        var records: [PluginRecord]
        /// What each selected plugin was loaded from, to tell what a reload changes.
        var fingerprints: [String: PluginFingerprint]
        /// Each active plugin as it was staged, so that a reload finding the same bytes
        /// reuses its checks and its cache copy (which pruning keeps: the host maps it).
        var staged: [String: StagedPlugin] = [:]
        /// Plugins replaced or removed by reloads, most recent first (bounded).
        var retired: [PluginRecord] = []
        /// The manifest's secrets (and the environment's), to scrub from what plugins say.
        var secrets: SecretScrubber = .none
        /// The secret access keys of the manifest's `s3` at start: the S3 API keeps using
        /// them whatever a reload reads, so they stay in every later scrubber.
        var s3Secrets: [String] = []
    }

    public let container: Container
    public let environment: Environment
    public let loader: PluginLoader
    public let configuration: Configuration
    let state: LockedValueBox<State>
    /// Recent hot-swap events, for `/v1/admin/events`.
    public let events = HotSwapEvents(capacity: 512)
    /// Reload counters and the last attempt, for `/metrics` and `/v1/admin/plugins`.
    public let reloads = ReloadStatistics()
    let queue: ReloadQueue
    let preflight: PreflightRunner
    /// Whether every required plugin is active: read on every object request, so kept
    /// as one atomic flag, updated whenever the records change.
    let requiredActive = Atomic<Bool>(true)
    /// Crashes of isolated plugins' workers since start, whatever plugin or build: the fleet
    /// counts them beside the 5xx answers its rollouts bake against.
    let workerCrashes = Atomic<Int>(0)
    public var isolatedCrashes: Int { workerCrashes.load(ordering: .relaxed) }
    /// The image count last warned about (see `hotSwap.maxRetainedImages`).
    let imagesWarnedAt = LockedValueBox(0)
    /// Called after each reload, with its outcome (the server re-aims its watchers).
    let reloadObservers = LockedValueBox<[@Sendable (ReloadOutcome) -> Void]>([])
    /// Called as each reload begins, with its trigger (the server tells systemd).
    let reloadStartObservers = LockedValueBox<[@Sendable (String) -> Void]>([])

    /// True while every `required` plugin selected for the environment is active.
    public var allRequiredActive: Bool { requiredActive.load(ordering: .relaxed) }

    /// Calls `observer` after every reload, applied or not.
    public func onReload(_ observer: @escaping @Sendable (ReloadOutcome) -> Void) {
        reloadObservers.withLock { $0.append(observer) }
    }

    /// Calls `observer` with the trigger as every reload begins (one the running hot swap
    /// mode refuses at once never begins); ``onReload(_:)``'s observers see it end.
    public func onReloadStart(_ observer: @escaping @Sendable (String) -> Void) {
        reloadStartObservers.withLock { $0.append(observer) }
    }

    func updateReadiness() {
        requiredActive.store(requiredFailures.isEmpty, ordering: .relaxed)
    }

    /// The manifest the host runs now.
    public var manifest: Manifest { state.withLock { $0.manifest } }
    /// Every plugin of the manifest, in manifest order, with its state.
    public var records: [PluginRecord] { state.withLock { $0.records } }
    /// The secrets of the running manifest and environment: no text a plugin hands back
    /// (an error while serving included) may show them; see ``SecretScrubber``.
    public var secrets: SecretScrubber { state.withLock { $0.secrets } }
    /// Plugins replaced or removed by hot swaps, most recent first.
    public var retiredRecords: [PluginRecord] { state.withLock { $0.retired } }

    private init(container: Container, state: State, environment: Environment, loader: PluginLoader,
                 configuration: Configuration, preflight: PreflightRunner) {
        self.container = container
        self.environment = environment
        self.loader = loader
        self.configuration = configuration
        self.state = LockedValueBox(state)
        self.preflight = preflight
        self.queue = ReloadQueue()
    }

    /// Reads the manifest and loads every plugin selected for the environment.
    ///
    /// A plugin that fails is recorded with its error and the others still load; see
    /// ``requiredFailure`` for the ones the manifest marks `required`. A fleet host,
    /// which must trust its start no more than a reload, starts with ``startChecked(_:)``.
    ///
    /// - Throws: manifest errors (`manifest.*`, exit status 2), including a missing
    ///   `${VAR}` in the config of a selected plugin; `loader.cache_failed`,
    ///   `loader.cache_untrusted`, `loader.cache_dir_unset`.
    public static func start(_ configuration: Configuration) async throws(PlugboardError) -> PluginHost {
        switch try await start(configuration, checked: false) {
        case .started(let host): return host
        case .refused(let error): throw error
        }
    }

    /// ``start(_:)``, or with `checked` ``startChecked(_:)``: what a reload would refuse
    /// is returned as the refusal, before anything of the manifest is mapped.
    static func start(_ configuration: Configuration, checked: Bool) async throws(PlugboardError) -> CheckedStart {
        let bytes: [UInt8], manifest: Manifest
        do throws(PlugboardError) {
            bytes = try ManifestFile.read(path: configuration.manifestPath, maxBytes: 1 << 20)
            manifest = try configuration.checked(Manifest.parse(bytes: bytes, path: configuration.manifestPath))
        } catch where checked {
            return .refused(error)
        }
        let environment = configuration.environment ?? manifest.defaultEnvironment ?? .development
        let container = Container(environment: environment, logger: configuration.logger)
        let cache = try PluginCache.directory(configuration.cacheDirectory, environment: configuration.processEnvironment)
        let loader = try PluginLoader(container: container,
                                      configuration: .init(cacheDirectory: cache, logger: configuration.logger,
                                                           failureLogLevel: configuration.pluginFailureLogLevel,
                                                           processEnvironment: configuration.processEnvironment,
                                                           checkOnly: configuration.checkOnly, manifestPath: configuration.manifestPath,
                                                           workerLauncher: configuration.workerLauncher))
        // A crash in plugin code later names the plugin on standard error.
        plugboard_crash_install()
        // Every selected plugin's configuration first: a missing variable stops the host
        // before anything is loaded.
        let selected = manifest.selectedPlugins(for: environment)
        let s3Secrets = manifest.s3?.knownSecrets(environment: configuration.processEnvironment) ?? []
        let configs: [String: PluginConfig], secrets: SecretScrubber
        do throws(PlugboardError) {
            (configs, secrets) = try resolvedConfigs(selected, configuration, s3Secrets: s3Secrets)
        } catch where checked {
            return .refused(error)
        }
        var byName = unselectedRecords(manifest, environment)
        let searchPath = configuration.productSearchPath
        let stagings = await BlockingWork.run { [loader] in stage(selected, trust: manifest.trust, searchPath: searchPath, loader: loader) }
        // One runner for the host's life: each keeps a thread (PreflightRunner).
        let preflight = configuration.preflightRunner
        // The workers that checked isolated plugins: each becomes its plugin's (mapped once).
        var checkedWorkers = PreflightOutcome()
        if checked {
            // The copies staged here are the ones checked and then mapped: no file read twice.
            let next = ReloadStateMachine.Next(manifest: manifest, digest: (try? Digest.sha256Hex(bytes)) ?? "", environment: environment,
                                               configs: configs, secrets: secrets, stagings: stagings)
            if let refusal = await refusalFromNothing(next, loader: loader, runner: preflight, checked: &checkedWorkers) {
                await stopUnused(checkedWorkers)
                return .refused(refusal)
            }
        }
        let fingerprints = PluginFingerprint.all(selected, stagings, trust: manifest.trust)
        await DependencyWalk().run(selected) { plugin in
            guard let staging = stagings[plugin.name], let staged = staging.staged else {
                byName[plugin.name] = loader.refused(plugin.name, pin: plugin.sha256, stagings[plugin.name])
                return false
            }
            let record = await loader.load(staged, config: configs[plugin.name] ?? PluginConfig(plugin: plugin.name),
                                           rank: plugin.rank, wraps: plugin.wraps, requires: plugin.dependencies, secrets: secrets,
                                           isolation: plugin.isolation, checked: checkedWorkers.workers.removeValue(forKey: plugin.name))
            byName[plugin.name] = record
            return record.state == .active
        } blocked: { plugin, blocker in
            byName[plugin.name] = requirementRecord(plugin, blocker: blocker, state: byName[blocker]?.state, environment: environment)
        }
        await stopUnused(checkedWorkers)
        let records = manifest.plugins.compactMap { plugin in byName[plugin.name].map { var r = $0; r.isolation = plugin.isolation; return r } }
        let state = State(manifest: manifest, manifestDigest: (try? Digest.sha256Hex(bytes)) ?? "",
                          records: records, fingerprints: fingerprints, staged: activeStaged(stagings, records),
                          secrets: secrets, s3Secrets: s3Secrets)
        let host = PluginHost(container: container, state: state, environment: environment, loader: loader,
                              configuration: configuration, preflight: preflight)
        loader.crashObserver.withLock { observer in
            observer = { [weak host] (plugin: String, kind: String, message: String) in
                guard let host else { return }
                if kind == "plugin_crashed" { host.workerCrashes.add(1, ordering: .relaxed) }
                host.events.emit(kind, plugin: plugin, generation: host.container.generation, message: message)
                host.updateReadiness()
            }
        }
        host.updateReadiness()
        // Copies no running host maps, beyond the ones kept for quick swaps back.
        let pruned = loader.pruneCache(keeping: manifest.hotSwap.maxRetainedImages)
        if !pruned.isEmpty {
            configuration.logger.info("pruned the plugin cache", metadata: ["removed": .string("\(pruned.count)")])
        }
        return .started(host)
    }

    /// The config of every selected plugin, `${VAR}`s expanded from the environment
    /// captured at start, under one bound for the whole manifest; and the scrubber of
    /// the secrets they, the environment and `s3Secrets` hold, for every text the plugins
    /// hand back.
    static func resolvedConfigs(_ selected: [ManifestPlugin], _ configuration: Configuration,
                                s3Secrets: [String]) throws(PlugboardError)
        -> (configs: [String: PluginConfig], secrets: SecretScrubber) {
        var budget = VariableExpander.Budget()
        var configs: [String: PluginConfig] = [:]
        for plugin in selected {
            configs[plugin.name] = try plugin.resolvedConfig(environment: configuration.processEnvironment, budget: &budget)
        }
        return (configs, SecretScrubber(plugins: selected, configs: configs, environment: configuration.processEnvironment,
                                         extra: s3Secrets))
    }

    /// Records of the plugins not selected (disabled, or for other environments).
    static func unselectedRecords(_ manifest: Manifest, _ environment: Environment) -> [String: PluginRecord] {
        var byName: [String: PluginRecord] = [:]
        for plugin in manifest.plugins {
            switch plugin.selection(for: environment) {
            case .disabled: byName[plugin.name] = PluginRecord(name: plugin.name, state: .disabled)
            case .skipped: byName[plugin.name] = PluginRecord(name: plugin.name, state: .skipped)
            case .selected: break
            }
        }
        return byName
    }

    static func requirementRecord(_ plugin: ManifestPlugin, blocker: String, state: PluginState?,
                                  environment: Environment) -> PluginRecord {
        let stateText = state?.description ?? "not loaded"
        if plugin.wraps == blocker && !plugin.requires.contains(blocker) {
            return PluginRecord(name: plugin.name, state: .failed, error: PlugboardError(
                .requirementUnavailable, "plugin \"\(plugin.name)\" wraps plugin \"\(blocker)\", which is \(stateText)",
                detail: "\(plugin.origin): \"wraps\" names \"\(blocker)\"; a layer stands above the provider of the plugin it wraps, which must be active first.",
                hint: "Fix or enable \"\(blocker)\" for the \(environment) environment, or point \"wraps\" at an active plugin."))
        }
        return PluginRecord(name: plugin.name, state: .failed, error: PlugboardError(
            .requirementUnavailable, "plugin \"\(plugin.name)\" requires plugin \"\(blocker)\", which is \(stateText)",
            detail: "\(plugin.origin): \"requires\" lists \"\(blocker)\"; it must be active first.",
            hint: "Fix or enable \"\(blocker)\" for the \(environment) environment, or remove it from \"requires\"."))
    }

    /// `$XDG_CACHE_HOME/plugboard`, else `~/.cache/plugboard`.
    ///
    /// - Throws: `loader.cache_dir_unset` when neither is set: there is no shared default.
    public static func defaultCacheDirectory(environment: [String: String]) throws(PlugboardError) -> String {
        try PluginCache.defaultDirectory(environment: environment)
    }

    /// The `required` plugins selected for this environment that are not active.
    public var requiredFailures: [PluginRecord] {
        let (manifest, records) = state.withLock { ($0.manifest, $0.records) }
        let required = manifest.requiredPluginNames(for: environment)
        return records.filter { required.contains($0.name) && !$0.isServing }
    }

    /// The rule for `required`, in one place: the error of the first required plugin that
    /// is not active, or nil. `check`, `plugins`, `services`, `graph` and `storage` exit 1
    /// with it; `serve` exits 1 with it at start unless hot swap is on, and then serves
    /// not-ready until a reload fixes it; a reload that would leave one not active is
    /// refused.
    public var requiredFailure: PlugboardError? {
        guard let first = requiredFailures.first else { return nil }
        if first.state == .active, let failure = first.worker?.failure {
            return PlugboardError(.requiredPluginFailed, "required plugin \"\(first.name)\" has failed in its worker process",
                                  detail: "\(failure.code): \(failure.message)." + (failure.detail.map { " \($0)" } ?? ""), hint: failure.hint)
        }
        return PlugboardError(.requiredPluginFailed, "required plugin \"\(first.name)\" is \(first.state)",
            detail: first.error.map { "\($0.code): \($0.message)." + ($0.detail.map { " \($0)" } ?? "") },
            hint: first.error?.hint ?? "Run plugboard check to see every plugin's state.")
    }

    /// Stops every managed service, in reverse start order.
    public func shutdown() async {
        await container.shutdown()
    }

    /// Locates and stages every plugin of `selected` (``PluginLoader/stage(path:name:pin:)``):
    /// each file read, hashed, checked and copied into the cache once, for whatever the
    /// caller does next. Blocking: call it off the cooperative pool.
    static func stage(_ selected: [ManifestPlugin], trust: ManifestTrust, searchPath: [String], loader: PluginLoader,
                      previous: [String: StagedPlugin] = [:]) -> [String: StagingResult] {
        var out: [String: StagingResult] = [:]
        for plugin in selected where out[plugin.name] == nil {
            switch locate(plugin, searchPath: searchPath, loader: loader) {
            case .success(let path):
                out[plugin.name] = loader.stage(path: path, name: plugin.name, pin: plugin.sha256, signing: trust.signing(for: plugin),
                                               previous: previous[plugin.name])
            case .failure(let error): out[plugin.name] = StagingResult(path: nil, sha256: nil, result: .failure(error))
            }
        }
        return out
    }

    /// The staged plugins of `records` that are active.
    static func activeStaged(_ stagings: [String: StagingResult], _ records: [PluginRecord]) -> [String: StagedPlugin] {
        var out: [String: StagedPlugin] = [:]
        for record in records where record.state == .active { out[record.name] = stagings[record.name]?.staged }
        return out
    }

    /// The file a plugin source names: a `path` as is, a `product` found in the search
    /// path, a remote `source` as its copy in the cache (fetched on a miss).
    static func locate(_ entry: ManifestPlugin, searchPath: [String], loader: PluginLoader) -> Result<String, PlugboardError> {
        let plugin = entry.name
        switch entry.source {
        case .remote(let store):
            // The decoder refuses a source without its pin.
            return loader.fetch(store, sha256: entry.sha256 ?? "", plugin: plugin)
        case .path(let p):
            return .success(p)
        case .product(let product):
            let file = "lib\(product).so"
            for folder in searchPath where access("\(folder)/\(file)", F_OK) == 0 {
                return .success("\(folder)/\(file)")
            }
            let mode = searchPath.first.map { $0.hasSuffix("/release") ? " -c release" : $0.hasSuffix("/debug") ? "" : " -c release" } ?? " -c release"
            // A misspelled product is likelier than an unbuilt one when a close name is
            // there: say so before the build command.
            let suggestion = Spelling.closest(to: product, among: products(in: searchPath))
            return .failure(PlugboardError(.productNotFound, "could not find plugin product \"\(product)\" of plugin \"\(plugin)\"",
                detail: "Looked for \(file) in: \(searchPath.isEmpty ? "(no folders)" : searchPath.joined(separator: ", ")).",
                hint: (suggestion.map { "Did you mean \"\($0)\"? Otherwise build" } ?? "Build")
                    + " it with: swift build\(mode) --product \(product); or add its folder to PLUGBOARD_PLUGIN_PATH."))
        }
    }
}

extension PluginHost {
    /// The products in the folders of `searchPath`: `X` for every `libX.so` there, the
    /// API library left out (it is no plugin).
    static func products(in searchPath: [String]) -> [String] {
        var found: [String] = []
        for folder in searchPath {
            for file in PluginCache.fileNames(in: folder) where file.hasPrefix("lib") && file.hasSuffix(".so") {
                let product = String(file.dropFirst(3).dropLast(3))
                if !product.isEmpty, product != "PlugboardAPI", !found.contains(product) { found.append(product) }
            }
        }
        return found
    }
}

/// What a selected plugin was loaded from: a reload reloads it when any of this differs.
struct PluginFingerprint: Sendable, Equatable {
    let plugin: ManifestPlugin
    /// The file it was located at, or nil when it could not be.
    let path: String?
    /// The SHA-256 of the file's bytes, when it was read.
    var sha256: String?
    /// What the manifest asked of its signature: a plugin whose bytes stay but whose
    /// signature or trust changes (signatures now required, its key removed) is staged
    /// and checked again, not kept as it runs.
    var signing: PluginSigning = .none

    /// The fingerprint of `plugin` as staged: where its file was found and the digest of
    /// the bytes read (nil when there were none).
    init(_ plugin: ManifestPlugin, _ staging: StagingResult?, trust: ManifestTrust) {
        self.init(plugin: plugin, path: staging?.path, sha256: staging?.sha256)
        signing = trust.signing(for: plugin)
    }

    /// The fingerprints of every plugin of `selected`.
    static func all(_ selected: [ManifestPlugin], _ stagings: [String: StagingResult],
                    trust: ManifestTrust = .none) -> [String: PluginFingerprint] {
        Dictionary(selected.map { ($0.name, PluginFingerprint($0, stagings[$0.name], trust: trust)) }, uniquingKeysWith: { a, _ in a })
    }

    init(plugin: ManifestPlugin, path: String?, sha256: String?) {
        self.plugin = plugin
        self.path = path
        self.sha256 = sha256
    }

    /// The same file, bytes, pin, rank, requirements, config and signing: nothing to reload.
    /// (`required`, `enabled`, environments and the place in the file do not change what
    /// is loaded.)
    static func == (a: PluginFingerprint, b: PluginFingerprint) -> Bool {
        a.path == b.path && a.sha256 == b.sha256 && a.plugin.source == b.plugin.source && a.plugin.sha256 == b.plugin.sha256
            && a.plugin.rank == b.plugin.rank && a.plugin.requires == b.plugin.requires && a.plugin.wraps == b.plugin.wraps
            && a.plugin.rawConfig.configValue == b.plugin.rawConfig.configValue && a.signing == b.signing
            && a.plugin.isolation == b.plugin.isolation
    }
}
