import MirrorStorageCore
import PlugboardAPI

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
// 1.6: registerLayer, and resolve(_:name:ownedBy:) for the new backend.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, MirrorStoragePlugin.self)
}

/// `MirrorStorage`: a live migration from the `ObjectStorage` of the plugin its manifest
/// entry `wraps` (the old backend) to that of the plugin its config's `to` names (the new
/// one), listed in the entry's `requires` (docs/plugins/MirrorStorage.md).
///
/// Config: `to` (required), `checkpoint`, `concurrency`, `pageSize`, `retrySeconds`.
enum MirrorStoragePlugin: Plugin {
    static let name = "MirrorStorage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let configuration = try MirrorConfiguration(registrar.config)
        let logger = registrar.logger
        let plugin = registrar.pluginName
        let from = registrar.wraps ?? ""
        let to = configuration.to
        try registrar.registerLayer((any ObjectStorage).self, managed: true) { r, below in
            let new = try r.resolve((any ObjectStorage).self, ownedBy: to)
            return MirrorStorage(old: below, new: new, from: from, configuration: configuration, plugin: plugin, logger: logger)
        }
    }
}
