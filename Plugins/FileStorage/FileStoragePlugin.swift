import PlugboardAPI

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, FileStoragePlugin.self)
}

/// `FileStorage`: an `ObjectStorage` that keeps objects as files under a folder.
///
/// Config:
/// - `root` (required string): the folder; created with mode 0700 when missing. A
///   relative path is relative to the process's working directory when the plugin is
///   loaded (docs/plugins/FileStorage.md says why).
/// - `fsync` (boolean, default true): flush each write and delete to stable storage
///   before it returns.
///
/// Registers a managed singleton: its `start` creates and checks the root, so a root that
/// cannot be used fails the load and nothing is published. Under `plugboard check` it
/// checks the root the same way and creates nothing.
enum FileStoragePlugin: Plugin {
    static let name = "FileStorage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let configuration = try FileStorage.Configuration(registrar.config,
                                                          currentDirectory: FileSystem.currentDirectory())
        let plugin = registrar.pluginName, checkOnly = registrar.checkOnly
        let logger = registrar.logger
        if case .string(let written)? = registrar.config["root"], !written.hasPrefix("/") {
            // Say where the store really is.
            logger.notice("relative root resolved", metadata: [
                "root": .string(written), "resolved": .string(configuration.root),
                "against": .string(registrar.config.baseDirectory == nil ? "the working directory" : "the manifest's folder")])
        }
        try registrar.register((any ObjectStorage).self, managed: true, implementation: FileStorage.self) { _ in
            FileStorage(configuration: configuration, plugin: plugin, logger: logger, checkOnly: checkOnly)
        }
    }
}
