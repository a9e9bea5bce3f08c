#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency

/// The host: a container, the manifest, and the plugins the manifest selects for the
/// environment, loaded in `requires` order.
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
        /// The process environment, captured once: `${VAR}` expansion and
        /// `PLUGBOARD_PLUGIN_PATH` read it, nothing reads the environment on its own.
        public var processEnvironment: [String: String]
        /// Folders searched for `product` plugins, in order: by default the running
        /// executable's folder, then `PLUGBOARD_PLUGIN_PATH`'s.
        public var productSearchPath: [String]
        public var logger: Logger

        public init(manifestPath: String, environment: Environment? = nil, cacheDirectory: String? = nil,
                    processEnvironment: [String: String] = [:], productSearchPath: [String]? = nil,
                    logger: Logger = .disabled) {
            self.manifestPath = manifestPath
            self.environment = environment
            self.cacheDirectory = cacheDirectory
            self.processEnvironment = processEnvironment
            self.productSearchPath = productSearchPath ?? Self.defaultSearchPath(processEnvironment)
            self.logger = logger
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

    public let container: Container
    public let manifest: Manifest
    public let environment: Environment
    public let loader: PluginLoader
    private let recordsBox: LockedRecords

    /// Every plugin of the manifest, in manifest order, with its state.
    public var records: [PluginRecord] { recordsBox.value }

    private init(container: Container, manifest: Manifest, environment: Environment, loader: PluginLoader,
                 records: [PluginRecord]) {
        self.container = container
        self.manifest = manifest
        self.environment = environment
        self.loader = loader
        self.recordsBox = LockedRecords(records)
    }

    /// Reads the manifest and loads every plugin selected for the environment.
    ///
    /// A plugin that fails is recorded with its error and the others still load; check
    /// ``requiredFailures`` for the ones the manifest marks `required`.
    ///
    /// - Throws: manifest errors (`manifest.*`, exit status 2), including a missing
    ///   `${VAR}` in the config of a selected plugin; `loader.cache_failed`.
    public static func start(_ configuration: Configuration) async throws(PlugboardError) -> PluginHost {
        let manifest = try Manifest.load(path: configuration.manifestPath)
        let environment = configuration.environment ?? manifest.defaultEnvironment ?? .development
        let container = Container(environment: environment, logger: configuration.logger)
        let cache = configuration.cacheDirectory ?? PluginCache.defaultDirectory(environment: configuration.processEnvironment)
        let loader = try PluginLoader(container: container,
                                      configuration: .init(cacheDirectory: cache, logger: configuration.logger))
        // Every selected plugin's configuration first: a missing variable stops the host
        // before anything is loaded.
        let selected = manifest.selectedPlugins(for: environment)
        var configs: [String: PluginConfig] = [:]
        var budget = VariableExpander.Budget()
        for plugin in selected {
            configs[plugin.name] = try plugin.resolvedConfig(environment: configuration.processEnvironment, budget: &budget)
        }
        var byName: [String: PluginRecord] = [:]
        for plugin in manifest.plugins {
            switch plugin.selection(for: environment) {
            case .disabled: byName[plugin.name] = PluginRecord(name: plugin.name, state: .disabled)
            case .skipped: byName[plugin.name] = PluginRecord(name: plugin.name, state: .skipped)
            case .selected: break
            }
        }
        for plugin in selected {
            if let blocker = plugin.requires.first(where: { byName[$0]?.state != .active }) {
                let state = byName[blocker]?.state.description ?? "not loaded"
                byName[plugin.name] = PluginRecord(name: plugin.name, state: .failed, error: PlugboardError(
                    .requirementUnavailable, "plugin \"\(plugin.name)\" requires plugin \"\(blocker)\", which is \(state)",
                    detail: "\(plugin.origin): \"requires\" lists \"\(blocker)\"; it must be active first.",
                    hint: "Fix or enable \"\(blocker)\" for the \(environment) environment, or remove it from \"requires\"."))
                continue
            }
            let path: String
            switch locate(plugin.source, plugin: plugin.name, searchPath: configuration.productSearchPath) {
            case .success(let p): path = p
            case .failure(let error):
                byName[plugin.name] = PluginRecord(name: plugin.name, state: .rejected, error: error)
                continue
            }
            byName[plugin.name] = await loader.load(PluginLoader.Request(
                name: plugin.name, path: path, sha256: plugin.sha256, config: configs[plugin.name], rank: plugin.rank))
        }
        let records = manifest.plugins.compactMap { byName[$0.name] }
        return PluginHost(container: container, manifest: manifest, environment: environment, loader: loader,
                          records: records)
    }

    /// `$XDG_CACHE_HOME/plugboard`, else `~/.cache/plugboard`.
    public static func defaultCacheDirectory(environment: [String: String]) -> String {
        PluginCache.defaultDirectory(environment: environment)
    }

    /// The `required` plugins selected for this environment that are not active.
    public var requiredFailures: [PluginRecord] {
        let required = Set(manifest.plugins.filter { $0.required && $0.selection(for: environment) == .selected }.map(\.name))
        return records.filter { required.contains($0.name) && $0.state != .active }
    }

    /// Stops every managed service, in reverse start order.
    public func shutdown() async {
        await container.shutdown()
    }

    /// The file a plugin source names: a `path` as is, a `product` found in the search
    /// path.
    static func locate(_ source: PluginSource, plugin: String, searchPath: [String]) -> Result<String, PlugboardError> {
        switch source {
        case .path(let p):
            return .success(p)
        case .product(let product):
            let file = "lib\(product).so"
            for folder in searchPath where access("\(folder)/\(file)", F_OK) == 0 {
                return .success("\(folder)/\(file)")
            }
            let mode = searchPath.first.map { $0.hasSuffix("/release") ? " -c release" : $0.hasSuffix("/debug") ? "" : " -c release" } ?? " -c release"
            return .failure(PlugboardError(.productNotFound, "could not find plugin product \"\(product)\" of plugin \"\(plugin)\"",
                detail: "Looked for \(file) in: \(searchPath.isEmpty ? "(no folders)" : searchPath.joined(separator: ", ")).",
                hint: "Build it with: swift build\(mode) --product \(product); or add its folder to PLUGBOARD_PLUGIN_PATH."))
        }
    }
}

/// The host's plugin records behind a lock (the hot-swap work will change them while
/// serving).
final class LockedRecords: @unchecked Sendable {
    // @unchecked Sendable: `records` is only touched through `box`, under its lock.
    private let box: LockedValueBox<[PluginRecord]>
    init(_ records: [PluginRecord]) { box = LockedValueBox(records) }
    var value: [PluginRecord] { box.withLock { $0 } }
}
