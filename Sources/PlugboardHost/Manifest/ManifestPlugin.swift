import PlugboardAPI
import PlugboardJSON

/// One entry of the manifest's `plugins` array, validated, with defaults applied.
///
/// Its configuration is kept as written (``redactedConfig`` shows it with secrets hidden;
/// ``resolvedConfig(environment:)`` gives what the plugin receives). Printing a plugin
/// (`description`, `debugDescription`, `dump`) shows the redacted configuration only.
///
/// Two plugins are equal when everything the manifest says about them is equal (name,
/// source, pin, signature, flags, environments, rank, requirements, what it wraps and configuration as written),
/// wherever they are in the file: the hot-swap component compares generations this way.
public struct ManifestPlugin: Sendable, Hashable {
    /// Whether a plugin is loaded in an environment.
    public enum Selection: String, Sendable, Hashable, CustomStringConvertible {
        /// Enabled and listed for the environment: the host loads it.
        case selected
        /// `enabled` is false; this wins over the environment.
        case disabled
        /// Enabled, but the environment is not in its `environments`.
        case skipped

        /// `selected`, `disabled` or `skipped`.
        public var description: String { rawValue }
    }

    /// The plugin's name: unique in the manifest, not empty; the owner of its registrations.
    public let name: String
    /// Where its shared library comes from.
    public let source: PluginSource
    /// The SHA-256 pin of its file, 64 lower-case hex digits, or nil when not pinned.
    public let sha256: String?
    /// Its file's detached signature, checked against the manifest's ``Manifest/trust``,
    /// or nil.
    public let signature: PluginSignature?
    /// False to keep the plugin out in every environment. Default true.
    public let enabled: Bool
    /// True when the host must not start without this plugin. Default false.
    public let required: Bool
    /// The environments it is loaded in, as written (no duplicates). Default all four.
    public let environments: [Environment]
    /// The rank of its registrations; higher wins. Default 0.
    public let rank: Int
    /// The names of plugins that must be loaded before it, as written. Each is in the
    /// manifest; whether it is selected for an environment is the loader's business.
    public let requires: [String]
    /// The name of the plugin whose providers its layers wrap (`registerLayer`), or nil.
    /// A layer requires what it wraps: it is loaded after it, and reloaded with it.
    public let wraps: String?
    /// Its position in the manifest's `plugins` array, from 0.
    public let index: Int
    /// Where its object starts in the manifest.
    public let location: SourceLocation
    /// The manifest's path as given, for messages.
    public let manifestPath: String
    /// The manifest's folder, absolute: relative paths in the configuration are relative
    /// to it (see ``resolvePath(_:)``).
    public let manifestDirectory: String

    /// The `config` object as written, `${VAR}`s unexpanded and secrets in clear.
    /// Deliberately not public: use ``redactedConfig`` or ``resolvedConfig(environment:)``.
    let rawConfig: JSONValue
    /// Where each entry of `requires` is written.
    let requirementLocations: [SourceLocation]
    /// Where the name is written.
    let nameLocation: SourceLocation
    /// Where `wraps`'s value is written.
    let wrapsLocation: SourceLocation?
    /// Where its code runs (`"isolation"`, with `"worker"`): in the host (the default) or in
    /// a supervised worker process.
    public internal(set) var isolation: PluginIsolation = .inProcess

    /// What it must be loaded after: `requires`, then the plugin it `wraps` if that is not
    /// among them. The load order, a reload's dependents and cycles all follow this.
    public var dependencies: [String] {
        guard let wraps, !requires.contains(wraps) else { return requires }
        return requires + [wraps]
    }

    init(name: String, source: PluginSource, sha256: String?, signature: PluginSignature? = nil, enabled: Bool, required: Bool,
         environments: [Environment], rank: Int, requires: [String], index: Int, location: SourceLocation,
         manifestPath: String, manifestDirectory: String, rawConfig: JSONValue,
         requirementLocations: [SourceLocation], nameLocation: SourceLocation,
         wraps: String? = nil, wrapsLocation: SourceLocation? = nil) {
        self.name = name
        self.source = source
        self.sha256 = sha256
        self.signature = signature
        self.enabled = enabled
        self.required = required
        self.environments = environments
        self.rank = rank
        self.requires = requires
        self.index = index
        self.location = location
        self.manifestPath = manifestPath
        self.manifestDirectory = manifestDirectory
        self.rawConfig = rawConfig
        self.requirementLocations = requirementLocations
        self.nameLocation = nameLocation
        self.wraps = wraps
        self.wrapsLocation = wrapsLocation
    }

    /// Whether the plugin is loaded in `environment`: `.disabled` when `enabled` is
    /// false, else `.skipped` when `environment` is not among its ``environments``, else
    /// `.selected`.
    public func selection(for environment: Environment) -> Selection {
        guard enabled else { return .disabled }
        return environments.contains(environment) ? .selected : .skipped
    }

    /// `path` made absolute against the manifest's folder (absolute paths are kept);
    /// for paths in the configuration, such as a file backend's `root`.
    public func resolvePath(_ path: String) -> String {
        ManifestPaths.absolute(path, base: manifestDirectory)
    }

    /// `manifestPath:line:column` of the plugin's object, to start messages about it.
    public var origin: String { "\(manifestPath):\(location)" }

    /// True when the manifest says the same about both plugins (see the type's discussion);
    /// their places in the file do not matter.
    public static func == (a: ManifestPlugin, b: ManifestPlugin) -> Bool {
        a.name == b.name && a.source == b.source && a.sha256 == b.sha256 && a.signature == b.signature && a.enabled == b.enabled
            && a.required == b.required && a.environments == b.environments && a.rank == b.rank
            && a.requires == b.requires && a.wraps == b.wraps && a.rawConfig.configValue == b.rawConfig.configValue
            && a.isolation == b.isolation
    }

    /// Hashes what ``==`` compares (a part of it).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(source)
        hasher.combine(sha256)
        hasher.combine(rank)
        hasher.combine(rawConfig.configValue)
    }
}
