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
    /// A layer (`wraps`) is served the storage it wraps from here (``WrappedStorages``):
    /// its proxy is registered as a layer too, and is handed the provider below it as an
    /// in-process layer is.
    ///
    /// `checked` is the supervisor whose first worker the preflight started for this plugin
    /// (``isolatedPlugin(_:path:sha256:config:rank:wraps:secrets:settings:)``, ``IsolatedPlugin/startFirst()``):
    /// that worker becomes the plugin's, so the build is mapped once, when it mapped exactly
    /// what this call would send (``IsolatedPlugin/checked(for:settings:)``); else it is
    /// stopped and a worker started afresh.
    public func prepareIsolated(_ staged: StagedPlugin, config: PluginConfig, rank: Int, wraps: String? = nil, requires: [String]?,
                                secrets: SecretScrubber, settings: WorkerSettings, checked: IsolatedPlugin? = nil) async -> Prepared {
        var record = PluginRecord(name: staged.name, state: .failed, path: staged.inspection.path, sha256: staged.sha256,
                                  header: staged.inspection.header)
        record.signedBy = staged.signer
        record.isolation = .process(settings)
        let plugin: IsolatedPlugin
        let ready: WorkerReady
        do throws(PlugboardError) {
            let fresh = try isolatedPlugin(staged.name, path: staged.loadPath, sha256: staged.sha256, config: config, rank: rank,
                                           wraps: wraps, secrets: secrets, settings: settings)
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
        let transaction = container.makeTransaction(owner: staged.name, rank: rank, wraps: wraps, requires: requires)
        do throws(PlugboardError) {
            for entry in ready.mappings {
                // Checked again here: the worker runs the plugin's code, not the host's.
                let code = PlugboardError.Code(entry.code), mapping = PlugboardError.Mapping(status: entry.status, s3Code: entry.s3Code)
                try PlugboardError.Mapping.check(mapping, for: code)
                try transaction.register(PlugboardError.Mapping.self, name: entry.code, instance: mapping)
            }
            for service in ready.services {
                let proxy = IsolatedStorage(plugin: plugin, service: service.name, checksHealth: service.healthChecking)
                if service.layer, let storages = plugin.wrapped {
                    try transaction.registerLayer((any ObjectStorage).self, name: service.name, managed: true) { _, below in
                        storages.set(below, name: service.name)
                        return proxy
                    }
                } else {
                    try transaction.register((any ObjectStorage).self, name: service.name, rank: service.rank, managed: true,
                                             instance: proxy)
                }
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
    /// host; for a layer, the storages it wraps are served from the host) and the sandbox it
    /// applies first. The preflight and the load make it the same way, here, so that a
    /// preflight's worker can be handed over only to the load it matches.
    ///
    /// - Throws: `isolation.unsupported` when this command starts no workers.
    func isolatedPlugin(_ name: String, path: String, sha256: String, config: PluginConfig, rank: Int, wraps: String? = nil,
                        secrets: SecretScrubber, settings: WorkerSettings) throws(PlugboardError) -> IsolatedPlugin {
        guard var launcher = configuration.workerLauncher else {
            throw PlugboardError(.isolationUnsupported, "plugin \"\(name)\" asks for a worker process, which this command does not start",
                detail: "Only plugboard serve, check, plugins and services start isolated plugins' workers.",
                hint: "Run the plugin with plugboard serve, or set \"isolation\": \"in-process\" for this command.")
        }
        let request = PreflightRequest(environment: container.environment, cacheDirectory: configuration.cacheDirectory,
                                       plugins: [.init(name: name, path: path, sha256: sha256, rank: rank, config: config,
                                                       requires: wraps.map { [$0] } ?? [], wraps: wraps)],
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
        let wrapped = wraps.map { below(WrappedStorages(owner: $0)) }
        let load = WorkerLoad(request: request, sandbox: settings.sandbox.policy(pluginCache: cache), below: wrapped?.names ?? [])
        launcher.transport = settings.transport
        return IsolatedPlugin(name: name, sha256: sha256, settings: settings, launcher: launcher, load: load,
                              logger: configuration.logger.scrubbing(secrets).with("component", "isolation"),
                              onCrash: { crash in observer.withLock { $0 }?(name, "plugin_crashed", crash.message) },
                              onRefusal: { message in observer.withLock { $0 }?(name, "plugin_sandbox_refused", message) },
                              wrapped: wrapped?.storages)
    }

    /// What a layer's worker is served before its commit: the storages the wrapped plugin
    /// provides in the running generation, and their names, which the worker registers
    /// below the layer (at least the unnamed one, answered "not in the host yet" when the
    /// wrapped plugin is loaded by the same reload).
    private func below(_ storages: WrappedStorages) -> (storages: WrappedStorages, names: [String?]) {
        let storageType = String(reflecting: (any ObjectStorage).self)
        var names: [String?] = []
        for info in container.registrations(owner: storages.owner) where info.service == storageType {
            guard !names.contains(info.name) else { continue }
            names.append(info.name)
            if let provider = try? container._provider((any ObjectStorage).self, name: info.name, ownedBy: storages.owner) {
                storages.set(provider, name: info.name)
            }
        }
        return (storages, names.isEmpty ? [nil] : names)
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
