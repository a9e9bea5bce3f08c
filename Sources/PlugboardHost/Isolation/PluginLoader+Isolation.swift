#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency

extension PluginLoader {
    /// An isolated plugin's counterpart of ``prepare(_:config:rank:wraps:requires:secrets:)``:
    /// its worker child maps the staged copy, registers and starts it in a container of its
    /// own; the transaction returned registers the host's proxies for what the worker
    /// registered (``IsolatedStorage``), owned by the plugin as its own registrations would be.
    ///
    /// `checked` is the supervisor whose first worker the preflight started for this plugin
    /// (``isolatedPlugin(_:config:rank:secrets:settings:)``, ``IsolatedPlugin/startFirst()``):
    /// that worker becomes the plugin's, so the build is mapped once, when it mapped exactly
    /// what this call would send (``IsolatedPlugin/checked(for:settings:)``); else it is
    /// stopped and a worker started afresh.
    public func prepareIsolated(_ staged: StagedPlugin, config: PluginConfig, rank: Int, requires: [String]?,
                                secrets: SecretScrubber, settings: WorkerSettings, checked: IsolatedPlugin? = nil) async -> Prepared {
        var record = PluginRecord(name: staged.name, state: .failed, path: staged.inspection.path, sha256: staged.sha256,
                                  header: staged.inspection.header)
        record.signedBy = staged.signer
        record.isolation = .process(settings)
        let plugin: IsolatedPlugin
        let ready: WorkerReady
        do throws(PlugboardError) {
            let fresh = try isolatedPlugin(staged.name, path: staged.loadPath, sha256: staged.sha256, config: config, rank: rank,
                                           secrets: secrets, settings: settings)
            if let checked, checked.checked(for: fresh.load, settings: settings), let first = checked.firstReady {
                (plugin, ready) = (checked, first)
                plugin.serve()
                plugin.logger.info("the preflight's worker serves the plugin", metadata: ["pid": .string(plugin.pid.map(String.init) ?? "-")])
            } else {
                if let checked { await checked.stop() }
                plugin = fresh
                ready = try await plugin.start()
            }
        } catch {
            if let checked { await checked.stop() }
            failed(&record, secrets.scrub(error))
            return Prepared(record: record, transaction: nil)
        }
        record.version = ready.version.map { secrets.scrub($0) }
        record.worker = plugin
        let transaction = container.makeTransaction(owner: staged.name, rank: rank, wraps: nil, requires: requires)
        do throws(PlugboardError) {
            for service in ready.services {
                try transaction.register((any ObjectStorage).self, name: service.name, rank: service.rank, managed: true,
                                         instance: IsolatedStorage(plugin: plugin, service: service.name, checksHealth: service.healthChecking))
            }
        } catch {
            failed(&record, error)
            await plugin.stop()
            return Prepared(record: record, transaction: nil)
        }
        return Prepared(record: record, transaction: transaction)
    }

    /// The supervisor of an isolated plugin's workers, not started: what each worker loads
    /// (the staged copy at `path`, alone in its container: what it requires stays in the
    /// host) and the sandbox it applies first. The preflight and the load make it the same
    /// way, here, so that a preflight's worker can be handed over only to the load it matches.
    ///
    /// - Throws: `isolation.unsupported` when this command starts no workers.
    func isolatedPlugin(_ name: String, path: String, sha256: String, config: PluginConfig, rank: Int, secrets: SecretScrubber,
                        settings: WorkerSettings) throws(PlugboardError) -> IsolatedPlugin {
        guard var launcher = configuration.workerLauncher else {
            throw PlugboardError(.isolationUnsupported, "plugin \"\(name)\" asks for a worker process, which this command does not start",
                detail: "Only plugboard serve, check, plugins and services start isolated plugins' workers.",
                hint: "Run the plugin with plugboard serve, or set \"isolation\": \"in-process\" for this command.")
        }
        let request = PreflightRequest(environment: container.environment, cacheDirectory: configuration.cacheDirectory,
                                       plugins: [.init(name: name, path: path, sha256: sha256, rank: rank, config: config)],
                                       secrets: secrets, checkOnly: configuration.checkOnly)
        let observer = crashObserver
        // Landlock grants existing paths only: a read-write folder the plugin would create
        // (FileStorage's root on a first start) is made here, as the plugin would make it.
        // Not for `check`, whose plugins are told to create nothing.
        for path in settings.sandbox.readWritePaths where !configuration.checkOnly && access(path, F_OK) != 0 {
            Self.makeFolders(path)
        }
        // The sandbox grants by absolute path; `--cache-dir` may be relative.
        let cache = PluginFile.realPath(configuration.cacheDirectory) ?? configuration.cacheDirectory
        let load = WorkerLoad(request: request, sandbox: settings.sandbox.policy(pluginCache: cache))
        launcher.transport = settings.transport
        return IsolatedPlugin(name: name, sha256: sha256, settings: settings, launcher: launcher, load: load,
                              logger: configuration.logger.scrubbing(secrets).with("component", "isolation"),
                              onCrash: { crash in observer.withLock { $0 }?(name, "plugin_crashed", crash.message) },
                              onRefusal: { message in observer.withLock { $0 }?(name, "plugin_sandbox_refused", message) })
    }

    /// `path` and its missing parents, mode 0700 (as FileStorage makes its root).
    static func makeFolders(_ path: String) {
        var built = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            built += "/" + part
            if access(built, F_OK) != 0 { _ = mkdir(built, 0o700) }
        }
    }
}
