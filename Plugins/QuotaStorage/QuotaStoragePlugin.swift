import PlugboardAPI

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
// 1.6: registerLayer and mapErrors; 1.8: StorageCall, to tell the S3 front end's records and parts apart.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, QuotaStoragePlugin.self)
}

/// `QuotaStorage`: a layer over the `ObjectStorage` of the plugin its manifest entry
/// `wraps`, refusing a put that would take what is stored through it past its limits
/// (docs/plugins/QuotaStorage.md).
///
/// Config: `maxBytes` (required), `maxObjects` and `prefixes` (`{"logs/": 1048576}`).
enum QuotaStoragePlugin: Plugin {
    static let name = "QuotaStorage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let limits = try QuotaLimits(registrar.config)
        let logger = registrar.logger
        let plugin = registrar.pluginName
        // Ceph's radosgw answers a quota past its limit the same way: 403 QuotaExceeded.
        try registrar.mapErrors([QuotaStorage.exceededCode: .init(status: 403, s3Code: "QuotaExceeded")])
        try registrar.registerLayer((any ObjectStorage).self, managed: true) { _, below in
            QuotaStorage(inner: below, limits: limits, plugin: plugin, logger: logger)
        }
    }
}
