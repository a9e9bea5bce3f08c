import PlugboardAPI

/// The host's manifest, `plugins.json`, read and validated: which plugins to load, from
/// where, in which environments and order, with which configuration.
///
/// The format is documented in `docs/MANIFEST.md`, with a JSON Schema in
/// `docs/plugins.schema.json`. Every error in the manifest is a ``PlugboardError``
/// whose code starts with `manifest.` and whose message says where
/// (`plugins.json:7:5: unknown key "enviroments" in plugins[1]`); the CLI exits with
/// status 2 for all of them. Reading stops at the first error.
///
/// ```swift
/// let manifest = try Manifest.load(path: "plugins.json")
/// let environment = flagEnvironment ?? manifest.defaultEnvironment ?? .development
/// for plugin in manifest.selectedPlugins(for: environment) {
///     let config = try plugin.resolvedConfig(environment: processEnvironment)
///     // load plugin.source, hand it config ...
/// }
/// ```
public struct Manifest: Sendable {
    /// The schema versions this host reads.
    public static let supportedSchemaVersions = [1]

    /// The manifest's path as given; every message starts with it.
    public let path: String
    /// The manifest's folder, absolute. Relative paths in the manifest are relative to it.
    public let directory: String
    /// The manifest's `schemaVersion`.
    public let schemaVersion: Int
    /// The manifest's `environment`: the environment when `--env` is not given, or nil.
    public let defaultEnvironment: Environment?
    /// Every plugin, in manifest order, whatever its selection.
    public let plugins: [ManifestPlugin]
    /// The `hotSwap` settings, defaults filled in.
    public let hotSwap: HotSwapSettings
    /// The `s3` object: the S3 API's key pairs, or nil when there is none.
    public let s3: S3Settings?
    /// The `trust` section: the keys plugin signatures are checked against and whether
    /// every plugin must be signed; ``ManifestTrust/none`` when there is none.
    public let trust: ManifestTrust

    init(path: String, directory: String, schemaVersion: Int, defaultEnvironment: Environment?,
         plugins: [ManifestPlugin], hotSwap: HotSwapSettings, s3: S3Settings? = nil, trust: ManifestTrust = .none) {
        self.path = path
        self.directory = directory
        self.schemaVersion = schemaVersion
        self.defaultEnvironment = defaultEnvironment
        self.plugins = plugins
        self.hotSwap = hotSwap
        self.s3 = s3
        self.trust = trust
    }

    /// Reads and validates the manifest at `path` with the default limits.
    ///
    /// - Throws: `manifest.not_found`, `manifest.unreadable`, or any other `manifest.`
    ///   error for its contents.
    public static func load(path: String) throws(PlugboardError) -> Manifest {
        try ManifestLoader().load(path: path)
    }

    /// Validates a manifest's bytes; `path` names it in messages and places it (relative
    /// paths in it are relative to `path`'s folder).
    public static func parse(bytes: [UInt8], path: String) throws(PlugboardError) -> Manifest {
        try ManifestLoader().parse(bytes: bytes, path: path)
    }

    /// `path` made absolute against the manifest's folder; an absolute path is kept.
    /// `.` components are removed, `..` and symbolic links kept.
    public func resolvePath(_ path: String) -> String {
        ManifestPaths.absolute(path, base: directory)
    }

    /// The plugin named `name`, or nil.
    public func plugin(named name: String) -> ManifestPlugin? {
        plugins.first { $0.name == name }
    }

    /// The names of the plugins marked `required` that `environment` selects: the one
    /// filter the `required` rule starts from (``PluginHost/requiredFailures``, a reload's
    /// check that none would be left inactive).
    public func requiredPluginNames(for environment: Environment) -> Set<String> {
        Set(plugins.filter { $0.required && $0.selection(for: environment) == .selected }.map(\.name))
    }

    /// The plugins to load in `environment` (those whose ``ManifestPlugin/selection(for:)``
    /// is `.selected`), each after the plugins it requires; plugins with no order between
    /// them keep manifest order.
    ///
    /// A requirement on a plugin that is not selected does not order anything; the loader
    /// decides what becomes of the plugin that requires it.
    public func selectedPlugins(for environment: Environment) -> [ManifestPlugin] {
        let selected = plugins.filter { $0.selection(for: environment) == .selected }
        return RequirementGraph(plugins: selected).topologicalOrder().map { selected[$0] }
    }
}
