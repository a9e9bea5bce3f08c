/// One call of the host into a plugin's entry point, after the handshake.
///
/// This type is an implementation detail of the plugin loader: the host creates it and
/// passes it, unretained, as the entry point's argument; ``PluginEntry/run(_:_:_:)`` in
/// the plugin fills it in. Plugin authors never touch it.
public final class PluginCall: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time, the host's loader, which hands it
    // to the plugin's entry point synchronously and reads it after the call returns.

    /// The registrar for `register`; nil for `describe`.
    public let registrar: PluginRegistrar?
    /// Filled by `describe` and by `register`.
    public private(set) var name: String?
    public private(set) var version: String?
    public private(set) var services: [String] = []
    /// Why `register` failed, when it returned ``PluginEntry/Status/failed``.
    public private(set) var failure: PlugboardError?

    public init(registrar: PluginRegistrar?) {
        self.registrar = registrar
    }

    /// Records what plugin `P` declares.
    public func describe<P: Plugin>(_ plugin: P.Type) {
        name = P.name
        version = P.version
        services = P.services
    }

    /// Runs `P.register(into:)`, turning anything it throws into ``failure``.
    public func register<P: Plugin>(_ plugin: P.Type) -> Int32 {
        describe(plugin)
        guard let registrar else {
            failure = PlugboardError(.protocolViolation, "register called without a registrar",
                                     hint: "This is a host bug; report it.")
            return PluginEntry.Status.failed
        }
        do {
            try P.register(into: registrar)
            return PluginEntry.Status.ok
        } catch let error as PlugboardError {
            failure = error
        } catch {
            let pluginName = registrar.pluginName, manifest = registrar.config.manifest ?? "the manifest"
            failure = PlugboardError(.registrationFailed, underlying: error) {
                .init(message: "plugin \"\(pluginName)\" failed to register",
                      detail: "Its register(into:) threw: \(String(describing: error)).",
                      hint: "Check the plugin's configuration in \(manifest) and its log lines.")
            }
        }
        return PluginEntry.Status.failed
    }
}
