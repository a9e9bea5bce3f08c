import Foundation
import PlugboardAPI
import PlugboardHost
import PlugboardTestSupport

/// A fresh folder under /tmp for one test: manifests, a FileStorage root, plugin caches,
/// server logs. Removed by ``remove()``.
struct TestSandbox: Sendable {
    let root: String

    init(_ label: String) throws {
        root = NSTemporaryDirectory() + "/reststorage-\(label)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    /// Where FileStorage keeps its objects for the server of this sandbox.
    var storageRoot: String { path("objects-root") }

    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A manifest binding FileStorage (the product beside the executable) on ``storageRoot``.
    func fileStorageManifest() throws -> String {
        let manifest = path("plugins.json")
        let text = """
        {"schemaVersion": 1, "plugins": [
          {"name": "Files", "product": "FileStorage", "config": {"root": "\(storageRoot)", "fsync": false}}
        ]}
        """
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        return manifest
    }

    /// A manifest binding RESTStorage (the product beside the executable) to the server at
    /// `baseURL`: a server whose storage is another server.
    func restStorageManifest(_ baseURL: String) throws -> String {
        let manifest = path("plugins-rest.json")
        let text = """
        {"schemaVersion": 1, "plugins": [
          {"name": "Remote", "product": "RESTStorage", "config": {"baseURL": "\(baseURL)", "timeoutSeconds": 60}}
        ]}
        """
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        return manifest
    }

    /// The folder with the package's build products: the test runner's folder, outside
    /// any `.xctest` bundle.
    static var productsFolder: String { BuildProducts.folder }

    /// Loads `lib<product>.so` through the host's `PluginLoader` into a fresh container and
    /// resolves its `ObjectStorage`; throws with the plugin's error when the load failed.
    func loadStorage(_ product: String, config: [String: ConfigValue]) async throws -> any ObjectStorage {
        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: path("test-cache")))
        let record = await loader.load(.init(name: product, path: "\(Self.productsFolder)/lib\(product).so",
                                             config: PluginConfig(config, plugin: product)))
        guard record.state == .active else {
            throw TestFailure("\(product) did not load: \(record.error.map { "\($0)" } ?? "no error")")
        }
        return try container.resolve()
    }

    /// libRESTStorage.so pointed at `baseURL`.
    func restStorage(_ baseURL: String, token: String? = nil, maxRetries: Int = 3) async throws -> any ObjectStorage {
        var config: [String: ConfigValue] = ["baseURL": .string(baseURL), "maxRetries": .integer(Int64(maxRetries)),
                                             "timeoutSeconds": .integer(60)]
        if let token { config["token"] = .string(token) }
        return try await loadStorage("RESTStorage", config: config)
    }

    /// libFileStorage.so on ``storageRoot``, in this process.
    func fileStorage() async throws -> any ObjectStorage {
        try await loadStorage("FileStorage", config: ["root": .string(storageRoot), "fsync": .bool(false)])
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
