import PlugboardAPI
import PlugboardConcurrency

extension PluginHost {
    /// What ``startChecked(_:)`` found.
    public enum CheckedStart: Sendable {
        /// The manifest passed the reload's checks; the host runs it.
        case started(PluginHost)
        /// A reload would have refused the manifest, with this error; nothing of it was
        /// mapped in this process.
        case refused(PlugboardError)
    }

    /// Starts the host only if a reload to its manifest would apply, judged as a host
    /// running nothing would judge it: the same checks (``ReloadStateMachine``) and the
    /// same preflight children as ``reload(trigger:)``. So a manifest that does not parse,
    /// a selected plugin that cannot be staged (a missing product, a bad pin), one that
    /// crashes, hangs, exits or fails its health check in its preflight, or a required
    /// plugin that would not be active is refused before any plugin is mapped here,
    /// whether `required` or not, as a running host refuses it.
    ///
    /// A fleet host starts this way (docs/FLEET.md): a manifest whose plugin traps at
    /// load must cost a refusal, not a crash at every start.
    ///
    /// - Throws: what keeps any host from starting: `loader.cache_failed`,
    ///   `loader.cache_untrusted`, `loader.cache_dir_unset`.
    public static func startChecked(_ configuration: Configuration) async throws(PlugboardError) -> CheckedStart {
        try await start(configuration, checked: true)
    }

    /// The reload's checks on the manifest at the configuration's path, in preflight
    /// children only (nothing is mapped in this process): `fleet set` and `fleet rollout`
    /// run them where they run before they write a manifest to the fleet.
    ///
    /// - Throws: what a reload to the manifest would be refused with (manifest errors, a
    ///   staging error, a preflight verdict, `reload.required_not_active`), or
    ///   `loader.cache_*` when the plugin cache cannot be used.
    public static func preflightAsReload(_ configuration: Configuration) async throws(PlugboardError) {
        let bytes = try ManifestFile.read(path: configuration.manifestPath, maxBytes: 1 << 20)
        let manifest = try configuration.checked(Manifest.parse(bytes: bytes, path: configuration.manifestPath))
        let environment = configuration.environment ?? manifest.defaultEnvironment ?? .development
        let cache = try PluginCache.directory(configuration.cacheDirectory, environment: configuration.processEnvironment)
        let loader = try PluginLoader(container: Container(environment: environment),
                                      configuration: .init(cacheDirectory: cache, logger: configuration.logger,
                                                           processEnvironment: configuration.processEnvironment,
                                                           checkOnly: configuration.checkOnly, manifestPath: configuration.manifestPath,
                                                           workerLauncher: configuration.workerLauncher))
        let selected = manifest.selectedPlugins(for: environment)
        let (configs, secrets) = try resolvedConfigs(
            selected, configuration, s3Secrets: manifest.s3?.knownSecrets(environment: configuration.processEnvironment) ?? [])
        let searchPath = configuration.productSearchPath
        let stagings = await BlockingWork.run { [loader] in stage(selected, trust: manifest.trust, searchPath: searchPath, loader: loader) }
        let next = ReloadStateMachine.Next(manifest: manifest, digest: try Digest.sha256Hex(bytes), environment: environment,
                                           configs: configs, secrets: secrets, stagings: stagings)
        let runner = configuration.preflightRunner
        var outcome = PreflightOutcome()
        let refusal = await refusalFromNothing(next, loader: loader, runner: runner, checkOnly: configuration.checkOnly, checked: &outcome)
        // Nothing is served here: the workers that checked isolated plugins end, their stops checked too.
        await stopChecked(&outcome)
        if let refusal { throw refusal }
        if let failed = outcome.verdicts.values.first(where: { $0.state != .active }), let error = failed.error { throw error }
    }

    /// What a reload to `next` would be refused with on a host that runs nothing, or nil
    /// when it would go on to map its plugins. The decisions are the reload's own, up to
    /// the mapping: a start must not trust more than a reload does.
    ///
    /// `checked` receives the preflight's verdicts and the workers that checked isolated
    /// plugins (started, not serving): the caller hands them to the plugins' loads or stops them.
    static func refusalFromNothing(_ next: ReloadStateMachine.Next, loader: PluginLoader, runner: PreflightRunner,
                                   checkOnly: Bool = false, checked: inout PreflightOutcome) async -> PlugboardError? {
        // Nothing runs: no records, no fingerprints, no digest. The machine reads the
        // manifest of the running state only to hand it on in an adoption, never reached here.
        let nothing = State(manifest: next.manifest, manifestDigest: "", records: [], fingerprints: [:])
        var machine = ReloadStateMachine(current: nothing, next: next)
        var action = machine.start()
        while true {
            switch action {
            case .refuse(let error):
                return error
            case .preflight(let candidates):
                checked = await preflight(candidates, loader: loader, runner: runner, environment: next.environment,
                                          timeoutSeconds: next.manifest.hotSwap.preflightTimeoutSeconds, secrets: next.secrets,
                                          checkOnly: checkOnly)
                action = machine.preflightFinished(checked.verdicts)
            case .map, .commit, .adopt, .finishUnchanged:
                return nil
            }
        }
    }
}
