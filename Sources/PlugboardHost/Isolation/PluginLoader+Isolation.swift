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
    public func prepareIsolated(_ staged: StagedPlugin, config: PluginConfig, rank: Int, requires: [String]?,
                                secrets: SecretScrubber, settings: WorkerSettings) async -> Prepared {
        var record = PluginRecord(name: staged.name, state: .failed, path: staged.inspection.path, sha256: staged.sha256,
                                  header: staged.inspection.header)
        record.signedBy = staged.signer
        record.isolation = .process(settings)
        guard var launcher = configuration.workerLauncher else {
            failed(&record, PlugboardError(.isolationUnsupported, "plugin \"\(staged.name)\" asks for a worker process, which this command does not start",
                detail: "Only plugboard serve, check, plugins and services start isolated plugins' workers.",
                hint: "Run the plugin with plugboard serve, or set \"isolation\": \"in-process\" for this command."))
            return Prepared(record: record, transaction: nil)
        }
        // The worker's container holds this plugin alone: what it requires stays in the
        // host, where the proxies' registrations wait for it as any plugin's would.
        let request = PreflightRequest(environment: container.environment, cacheDirectory: configuration.cacheDirectory,
                                       plugins: [.init(name: staged.name, path: staged.loadPath, sha256: staged.sha256, rank: rank,
                                                       config: config)],
                                       secrets: secrets, checkOnly: configuration.checkOnly)
        let name = staged.name
        let observer = crashObserver
        // Landlock grants existing paths only: a read-write folder the plugin would create
        // (FileStorage's root on a first start) is made here, as the plugin would make it.
        for path in settings.sandbox.readWritePaths where access(path, F_OK) != 0 {
            Self.makeFolders(path)
        }
        // The sandbox grants by absolute path; `--cache-dir` may be relative.
        let cache = PluginFile.realPath(configuration.cacheDirectory) ?? configuration.cacheDirectory
        let load = WorkerLoad(request: request, sandbox: settings.sandbox.policy(pluginCache: cache))
        launcher.transport = settings.transport
        let plugin = IsolatedPlugin(name: name, sha256: staged.sha256, settings: settings, launcher: launcher, load: load,
                                    logger: configuration.logger.scrubbing(secrets).with("component", "isolation"),
                                    onCrash: { crash in observer.withLock { $0 }?(name, "plugin_crashed", crash.message) },
                                    onRefusal: { message in observer.withLock { $0 }?(name, "plugin_sandbox_refused", message) })
        let ready: WorkerReady
        do throws(PlugboardError) {
            ready = try await plugin.start()
        } catch {
            failed(&record, secrets.scrub(error))
            return Prepared(record: record, transaction: nil)
        }
        record.version = ready.version.map { secrets.scrub($0) }
        record.worker = plugin
        let transaction = container.makeTransaction(owner: name, rank: rank, wraps: nil, requires: requires)
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

    /// `path` and its missing parents, mode 0700 (as FileStorage makes its root).
    static func makeFolders(_ path: String) {
        var built = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            built += "/" + part
            if access(built, F_OK) != 0 { _ = mkdir(built, 0o700) }
        }
    }
}
