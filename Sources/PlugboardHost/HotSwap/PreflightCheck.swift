import PlugboardAPI
import PlugboardConcurrency

extension PluginHost {
    /// `plugboard check`'s default: every selected plugin checked in preflight children,
    /// never in this process, so that a plugin that crashes, hangs or exits is reported
    /// by name instead of taking the check down (or, with `exit(0)`, passing it).
    ///
    /// One child checks the plugins in load order; when it dies in a plugin, that plugin
    /// gets the verdict and a new child checks the ones it did not reach. An isolated
    /// plugin is checked by a start of its worker, in its sandbox, as it will run
    /// (``preflight(_:loader:runner:environment:timeoutSeconds:secrets:checkOnly:)``); the
    /// worker is then stopped, and its stop checked too.
    ///
    /// - Returns: the manifest, the environment, and a record per plugin in manifest order.
    /// - Throws: manifest errors, a missing `${VAR}`, `loader.cache_failed`, `loader.cache_untrusted`,
    ///   `loader.cache_dir_unset`.
    public static func preflightCheck(_ configuration: Configuration) async throws(PlugboardError)
        -> (manifest: Manifest, environment: Environment, records: [PluginRecord]) {
        let manifest = try configuration.checked(Manifest.load(path: configuration.manifestPath))
        let environment = configuration.environment ?? manifest.defaultEnvironment ?? .development
        let cache = try PluginCache.directory(configuration.cacheDirectory, environment: configuration.processEnvironment)
        let loader = try PluginLoader(container: Container(environment: environment),
                                      configuration: .init(cacheDirectory: cache, logger: configuration.logger,
                                                           processEnvironment: configuration.processEnvironment,
                                                           checkOnly: configuration.checkOnly, manifestPath: configuration.manifestPath,
                                                           workerLauncher: configuration.workerLauncher))
        let selected = manifest.selectedPlugins(for: environment)
        let (configs, secrets) = try Self.resolvedConfigs(
            selected, configuration, s3Secrets: manifest.s3?.knownSecrets(environment: configuration.processEnvironment) ?? [])
        var byName = unselectedRecords(manifest, environment)
        let searchPath = configuration.productSearchPath
        let stagings = await BlockingWork.run { [loader] in stage(selected, trust: manifest.trust, searchPath: searchPath, loader: loader) }
        var pending: [PreflightRequest.Plugin] = []
        // A requirement staged is the child's to judge.
        await DependencyWalk().run(selected) { plugin in
            guard let staged = stagings[plugin.name]?.staged else {
                byName[plugin.name] = loader.refused(plugin.name, pin: plugin.sha256, stagings[plugin.name])
                return false
            }
            pending.append(PreflightRequest.Plugin(staged, plugin, config: configs[plugin.name]))
            byName[plugin.name] = PluginRecord(name: plugin.name, state: .failed, path: staged.inspection.path,
                                               sha256: staged.sha256, header: staged.inspection.header)
            byName[plugin.name]?.signedBy = staged.signer
            return true
        } blocked: { plugin, blocker in
            byName[plugin.name] = requirementRecord(plugin, blocker: blocker, state: byName[blocker]?.state, environment: environment)
        }
        var outcome = await preflight(pending, loader: loader, runner: configuration.preflightRunner, environment: environment,
                                      timeoutSeconds: manifest.hotSwap.preflightTimeoutSeconds, secrets: secrets,
                                      checkOnly: configuration.checkOnly)
        await stopChecked(&outcome)
        for (name, verdict) in outcome.verdicts {
            var record = byName[name] ?? verdict
            record.state = verdict.state
            record.version = verdict.version ?? record.version
            record.services = verdict.services
            record.generation = verdict.generation
            record.error = verdict.error
            byName[name] = record
        }
        return (manifest, environment, manifest.plugins.compactMap { plugin in
            // Checked as it will run (in a preflight child, or its sandboxed worker); the record says which.
            byName[plugin.name].map { var r = $0; r.isolation = plugin.isolation; return r }
        })
    }
}
