import PlugboardAPI
import S3StorageClient

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, S3StoragePlugin.self)
}

/// `S3Storage`: an `ObjectStorage` over the S3 REST API (AWS or any S3-compatible server).
///
/// Config (docs/plugins/S3Storage.md): `bucket` (required), `region`, `endpoint`,
/// `pathStyle`, `accessKeyId`, `secretAccessKey`, `sessionToken`, `timeoutSeconds`,
/// `maxRetries`. Credentials come from the config, then the environment, then the shared
/// credentials file, in the order AWS SDKs use.
///
/// Registers a managed singleton: its `start` asks S3 for the bucket, so a bucket that
/// does not exist or keys that S3 refuses fail the load before anything is published.
enum S3StoragePlugin: Plugin {
    static let name = "S3Storage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        try S3StorageRegistration.register(into: registrar)
    }
}
