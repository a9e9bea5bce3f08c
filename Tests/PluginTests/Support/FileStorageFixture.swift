#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardCrypto
import PlugboardHost

/// A FileStorage root in a fresh temporary folder, and ways to load libFileStorage.so on it.
struct FileStorageFixture {
    /// The temporary folder that holds the root (and nothing else FileStorage writes).
    let sandbox: String
    /// The root given to the plugin.
    let root: String

    /// A root `sandbox/store/root` that does not exist yet.
    init(_ label: String = "filestorage") {
        sandbox = PluginFixtures.temporaryFolder(label)
        root = "\(sandbox)/store/root"
    }

    var objectsFolder: String { "\(root)/objects" }
    var temporaryFolder: String { "\(root)/tmp" }

    /// Loads libFileStorage.so on the root into a fresh container.
    func load(fsync: Bool = true, extra: [String: ConfigValue] = [:]) async throws -> PluginFixtures.Loaded {
        var config: [String: ConfigValue] = ["root": .string(root), "fsync": .bool(fsync)]
        config.merge(extra) { $1 }
        return try await PluginFixtures.load("FileStorage", config: config)
    }

    /// Loads libFileStorage.so on the root and resolves its storage.
    func storage(fsync: Bool = true) async throws -> any ObjectStorage {
        let loaded = try await load(fsync: fsync)
        guard loaded.record.state == .active else {
            throw FixtureError("FileStorage did not load: \(loaded.record.error.map { "\($0)" } ?? "no error")")
        }
        return try loaded.storage()
    }

    /// Removes the sandbox.
    func remove() { PluginFixtures.removeTree(sandbox) }

    /// The lowercase hex MD5 of `data`, computed here rather than by the storage.
    static func md5(_ data: [UInt8]) throws -> String {
        var hasher = try MD5Hasher()
        data.withUnsafeBytes { hasher.update($0) }
        return Hex.encode(try hasher.finalize())
    }

    /// The lowercase hex of a key's UTF-8 bytes: how FileStorage names its file.
    static func hex(_ key: String) -> String { Hex.encode(Array(key.utf8)) }
}
