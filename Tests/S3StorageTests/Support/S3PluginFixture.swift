import Foundation
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport

/// libS3Storage.so as the package builds it, loaded through the host's PluginLoader.
enum S3PluginFixture {
    /// The build products folder (`.build/<triple>/debug`): the test runner's folder,
    /// outside its `.xctest` bundle.
    static var productsFolder: String { BuildProducts.folder }

    static let cacheFolder: String = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-plugin-cache-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// The plugin config for `bucket` on the shared moto server.
    static func config(bucket: String, server: MotoServer, extra: [String: ConfigValue] = [:]) -> [String: ConfigValue] {
        config(bucket: bucket, endpoint: server.endpoint, accessKeyId: MotoServer.accessKeyId,
               secretAccessKey: MotoServer.secretAccessKey, extra: extra)
    }

    /// The plugin config for `bucket` on any S3 server (RGW) with its key pair.
    static func config(bucket: String, endpoint: String, accessKeyId: String, secretAccessKey: String,
                       extra: [String: ConfigValue] = [:]) -> [String: ConfigValue] {
        var config: [String: ConfigValue] = [
            "bucket": .string(bucket), "endpoint": .string(endpoint), "region": .string("us-east-1"),
            "accessKeyId": .string(accessKeyId), "secretAccessKey": .string(secretAccessKey),
            "timeoutSeconds": .integer(30), "maxRetries": .integer(2),
        ]
        config.merge(extra) { $1 }
        return config
    }

    /// Loads libS3Storage.so with `config` into a new container.
    static func load(_ config: [String: ConfigValue], logger: Logger = .disabled) async throws -> (Container, PluginRecord) {
        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cacheFolder, logger: logger))
        let record = await loader.load(.init(name: "S3Storage", path: "\(productsFolder)/libS3Storage.so",
                                             config: PluginConfig(config, plugin: "S3Storage")))
        return (container, record)
    }

    /// Loads the plugin and resolves its storage; throws when the load failed.
    static func storage(_ config: [String: ConfigValue]) async throws -> any ObjectStorage {
        let (container, record) = try await load(config)
        guard record.state == .active else {
            throw TestFailure("S3Storage did not load: \(record.error.map { "\($0)" } ?? "no error")")
        }
        return try container.resolve()
    }
}
