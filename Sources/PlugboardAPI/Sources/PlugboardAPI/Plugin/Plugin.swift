/// What a plugin author implements: a name, a version and a registration function.
///
/// ```swift
/// import PlugboardAPI
///
/// @section("plugboard_header") @used
/// let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)
///
/// @c(plugboard_plugin_entry)
/// public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
///     PluginEntry.run(op, arg, AcmeStorage.self)
/// }
///
/// enum AcmeStorage: Plugin {
///     static let name = "AcmeStorage"
///     static let version = "1.0.0"
///     static func register(into registrar: PluginRegistrar) throws {
///         let bucket = try registrar.config.string("bucket")
///         try registrar.register((any ObjectStorage).self) { _ in AcmeBackend(bucket: bucket) }
///     }
/// }
/// ```
///
/// Implementation requirements:
/// - `register(into:)` only registers: it must not block, start threads or do I/O beyond
///   reading its configuration. Work that needs time belongs in a ``ManagedService``'s
///   `start`, which the host runs before publishing the registration.
/// - It reports failure by throwing; it must never call `exit`, trap, or `dlclose`.
/// - It may be called more than once in one process (a hot swap loads a new copy next to
///   the old one), so it must not keep global state that assumes a single load.
public protocol Plugin {
    /// The plugin's name, as operators see it.
    static var name: String { get }
    /// The plugin's own version, free-form (semantic versioning recommended).
    static var version: String { get }
    /// The services it provides, for `plugboard inspect` (module-qualified type names).
    static var services: [String] { get }
    /// Adds the plugin's services through `registrar`; throw to refuse to load.
    static func register(into registrar: PluginRegistrar) throws
}

extension Plugin {
    public static var services: [String] { [] }
}
