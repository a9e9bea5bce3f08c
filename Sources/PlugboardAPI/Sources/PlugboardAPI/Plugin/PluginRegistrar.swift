/// What a plugin registers through: a transactional view of the host's container, with
/// the plugin's configuration, the environment and a logger.
///
/// Everything registered here belongs to the plugin (its owner is the plugin's manifest
/// name) and is published in one transaction after `register(into:)` returns; if the
/// plugin throws, or one of its managed services fails to start, none of it is.
///
/// ```swift
/// static func register(into registrar: PluginRegistrar) throws {
///     let root = try registrar.config.string("root")
///     try registrar.register((any ObjectStorage).self, managed: true) { _ in
///         FileStorage(root: root, logger: registrar.logger)
///     }
/// }
/// ```
public final class PluginRegistrar: ServiceResolver, Sendable {
    /// The plugin's name in the manifest: the owner of its registrations.
    public let pluginName: String
    /// The environment the host runs in.
    public let environment: Environment
    /// The plugin's `config` object from the manifest, `${VAR}`s expanded, secrets as
    /// plain strings.
    public let config: PluginConfig
    /// A logger already carrying `plugin=<name>`.
    public let logger: Logger
    /// The transaction the registrations go into; the host commits it.
    public let transaction: Transaction
    /// The host's process environment, captured once when it started (a reload does not
    /// read it again): what a plugin reads instead of `getenv` (AWS's credential chain
    /// does), so that the host decides what plugins see, and a preflight child gives its
    /// plugins the very environment the host would (PlugboardAPI 1.5). Empty where the
    /// host gives none, such as a test's own container.
    public let processEnvironment: [String: String]
    /// True when the host loads the plugin only to see that it loads (`plugboard check`):
    /// its services are built, started, health-checked and stopped, and nothing is served.
    /// A start that would create something (a folder, a file, a bucket) then checks that it
    /// could, and creates nothing, so that a check leaves the machine as it found it. False
    /// for `serve`, a hot swap's preflight and tests (PlugboardAPI 1.6).
    public let checkOnly: Bool
    private let container: Container

    /// Made by the host's loader, one per plugin load (PlugboardAPI 1.6): `checkOnly` for
    /// `plugboard check`, `wraps` for a plugin whose manifest entry says `"wraps": wraps`,
    /// whose ``registerLayer(_:name:managed:mayBeOutranked:factory:)`` wraps that plugin's providers, and
    /// `requires` the plugins the entry requires (``Transaction/requires``).
    public init(pluginName: String, container: Container, config: PluginConfig, logger: Logger, rank: Int,
                processEnvironment: [String: String], checkOnly: Bool, wraps: String?, requires: [String]?) {
        self.pluginName = pluginName
        self.environment = container.environment
        self.config = config
        self.logger = logger.with("plugin", .string(pluginName))
        self.container = container
        self.transaction = container.makeTransaction(owner: pluginName, rank: rank, wraps: wraps, requires: requires)
        self.processEnvironment = processEnvironment
        self.checkOnly = checkOnly
    }

    /// A registrar that is or is not a check, wrapping nothing (PlugboardAPI 1.6).
    public convenience init(pluginName: String, container: Container, config: PluginConfig, logger: Logger, rank: Int = 0,
                            processEnvironment: [String: String], checkOnly: Bool) {
        self.init(pluginName: pluginName, container: container, config: config, logger: logger, rank: rank,
                  processEnvironment: processEnvironment, checkOnly: checkOnly, wraps: nil, requires: nil)
    }

    /// A layer's registrar outside a check (PlugboardAPI 1.6).
    public convenience init(pluginName: String, container: Container, config: PluginConfig, logger: Logger, rank: Int,
                            processEnvironment: [String: String], wraps: String?) {
        self.init(pluginName: pluginName, container: container, config: config, logger: logger, rank: rank,
                  processEnvironment: processEnvironment, checkOnly: false, wraps: wraps, requires: nil)
    }

    /// The 1.5 initializer, kept as it was: not a check.
    public convenience init(pluginName: String, container: Container, config: PluginConfig, logger: Logger, rank: Int = 0,
                            processEnvironment: [String: String]) {
        self.init(pluginName: pluginName, container: container, config: config, logger: logger, rank: rank,
                  processEnvironment: processEnvironment, checkOnly: false, wraps: nil, requires: nil)
    }

    /// The 1.0 initializer, kept as it was (a defaulted parameter would change its
    /// symbol): no process environment.
    public convenience init(pluginName: String, container: Container, config: PluginConfig, logger: Logger, rank: Int = 0) {
        self.init(pluginName: pluginName, container: container, config: config, logger: logger, rank: rank,
                  processEnvironment: [:])
    }

    /// Registers a factory; see ``Transaction/register(_:name:rank:scope:managed:implementation:factory:)``.
    /// The rank defaults to the plugin's `rank` in the manifest.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                            scope: Scope = .singleton, managed: Bool = false,
                            implementation: (any Any.Type)? = nil,
                            factory: @escaping @Sendable (borrowing Resolver) throws -> T) throws(PlugboardError) {
        try transaction.register(service, name: name, rank: rank, scope: scope, managed: managed,
                                 implementation: implementation, factory: factory)
    }

    /// Registers a ready value; see ``Transaction/register(_:name:rank:managed:instance:)``.
    public func register<T>(_ service: T.Type, name: String? = nil, rank: Int? = nil,
                            managed: Bool = false, instance: T) throws(PlugboardError) {
        try transaction.register(service, name: name, rank: rank, managed: managed, instance: instance)
    }

    /// Registers a layer over the provider of the plugin this one wraps (the manifest's
    /// `wraps`); see ``Transaction/registerLayer(_:name:managed:mayBeOutranked:factory:)`` (PlugboardAPI 1.6).
    /// The factory is handed that provider in the generation being built, so a hot swap
    /// of either plugin rebuilds the stack over the right one.
    public func registerLayer<T>(_ service: T.Type, name: String? = nil, managed: Bool = false, mayBeOutranked: Bool = false,
                                 factory: @escaping @Sendable (borrowing Resolver, _ below: T) throws -> T) throws(PlugboardError) {
        try transaction.registerLayer(service, name: name, managed: managed, mayBeOutranked: mayBeOutranked, factory: factory)
    }

    /// The manifest name of the plugin this one wraps, or nil (PlugboardAPI 1.6).
    public var wraps: String? { transaction.wraps }

    /// Resolves a service that is already published (another plugin's, or the host's).
    /// The plugin's own registrations are not visible here before the commit; its
    /// factories see them through the ``Resolver`` they are given. Not the way to wrap a
    /// provider: at a hot swap this answers the running generation (the previous layer,
    /// or the old build of the wrapped plugin); use ``registerLayer(_:name:managed:mayBeOutranked:factory:)``.
    public func resolve<T>(_ type: T.Type, name: String?) throws(PlugboardError) -> T {
        try container.resolve(type, name: name)
    }
}
