import PlugboardAPI
import RESTStorageClient

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, RESTStoragePlugin.self)
}

/// `RESTStorage`: an `ObjectStorage` kept by another Plugboard host, over its
/// `/v1/objects` HTTP API.
///
/// Config:
/// - `baseURL` (required string): the other host, `http://` or `https://`, with any path
///   prefix, such as `http://10.0.0.5:8080`.
/// - `token` (string): the bearer token the other host wants (its `PLUGBOARD_API_TOKEN`).
///   A secret: never logged.
/// - `timeoutSeconds` (number, default 30): how long a request may wait with no progress.
/// - `maxRetries` (integer 0 to 10, default 3): retries of a request after a 502, 503,
///   504, a refused or dropped connection, or a timeout.
///
/// Registers a managed singleton: its `stop` closes the idle connections (`http://`) or
/// releases the URL session (`https://`). Nothing is checked on the network at load: the
/// other host may come up later.
enum RESTStoragePlugin: Plugin {
    static let name = "RESTStorage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let configuration = try RESTStorage.Configuration(registrar.config)
        let plugin = registrar.pluginName
        let logger = registrar.logger
        try registrar.register((any ObjectStorage).self, managed: true, implementation: RESTStorage.self) { _ in
            RESTStorage(configuration: configuration, plugin: plugin, logger: logger)
        }
    }
}
