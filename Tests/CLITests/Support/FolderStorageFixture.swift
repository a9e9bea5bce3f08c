#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardTestSupport

/// A small plugin built at test time: an `ObjectStorage` that keeps each object in a
/// file of a folder (its config's `root`), so that objects outlive one `plugboard` run.
/// MemoryStorage cannot show a put-then-get round trip across processes.
///
/// It is compiled once per test process with the toolchain's `swiftc` against the
/// package's own `libPlugboardAPI.so` (about a second), like any out-of-tree plugin.
/// Config keys other than `root` are ignored, so a test can hide a secret in its config.
enum FolderStorageFixture {
    /// The built `libFolderStorage.so`, or why it could not be built.
    static let library: Result<String, FixtureError> = build()

    /// The plugin's declared name and version, as `inspect` should report them.
    static let name = "FolderStorage"
    static let version = "0.9.0"

    /// The library's path. The compile (about a second alone, many beside the suite) runs,
    /// and is waited for, on a thread of its own: not on one of the cooperative pool's two.
    static func path() async throws -> String { try await OwnThread.run { library }.get() }

    /// The fixture's folder, removed when the test process exits. Set once, by `build()`,
    /// inside the initializer of `library` (which Swift runs exactly once).
    nonisolated(unsafe) private static var folder: Sandbox?

    private static func build() -> Result<String, FixtureError> {
        do {
            let sandbox = try Sandbox("plugboard-cli-fixture")
            folder = sandbox
            atexit { FolderStorageFixture.folder?.remove() }
            let header = PluginHeader.expected
            let source = try sandbox.write("FolderStorage.swift", """
                import Foundation
                import PlugboardAPI

                @section("plugboard_header") @used
                let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = \
                (0x4452_4250, 1, \(header.abiVersion), \(header.apiMajor), \(header.apiMinor))

                @c(plugboard_plugin_entry)
                public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
                    PluginEntry.run(op, arg, FolderStoragePlugin.self)
                }

                enum FolderStoragePlugin: Plugin {
                    static let name = "\(name)"
                    static let version = "\(version)"
                    static let services = ["PlugboardAPI.ObjectStorage"]
                    static func register(into registrar: PluginRegistrar) throws {
                        let root = try registrar.config.string("root")
                        try registrar.register((any ObjectStorage).self, implementation: FolderStorage.self) { _ in
                            FolderStorage(root: root)
                        }
                    }
                }

                /// Each object is one JSON file (a StoredObject) named after its key in hex.
                struct FolderStorage: ObjectStorage {
                    let root: String

                    func file(_ key: String) -> URL {
                        URL(fileURLWithPath: root).appendingPathComponent(key.utf8.map { String(format: "%02x", $0) }.joined())
                    }

                    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
                        try ObjectKey.validate(key)
                        try ObjectMetadata.validate(metadata)
                        let info = ObjectInfo(key: key, size: data.count, etag: "etag-\\(data.count)",
                                              contentType: try ObjectContentType.resolve(contentType),
                                              lastModified: Timestamp(secondsSince1970: 1_700_000_000), metadata: metadata)
                        try JSONEncoder().encode(StoredObject(info: info, data: data)).write(to: file(key))
                        return info
                    }

                    func get(_ key: String) async throws -> StoredObject {
                        try ObjectKey.validate(key)
                        guard let data = try? Data(contentsOf: file(key)) else { throw PlugboardError.objectNotFound(key: key) }
                        return try JSONDecoder().decode(StoredObject.self, from: data)
                    }

                    func head(_ key: String) async throws -> ObjectInfo { try await get(key).info }

                    func delete(_ key: String) async throws {
                        try ObjectKey.validate(key)
                        try? FileManager.default.removeItem(at: file(key))
                    }

                    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
                        var infos: [ObjectInfo] = []
                        for name in try FileManager.default.contentsOfDirectory(atPath: root) {
                            let data = try Data(contentsOf: URL(fileURLWithPath: root).appendingPathComponent(name))
                            let info = try JSONDecoder().decode(StoredObject.self, from: data).info
                            if ObjectKey.hasPrefix(info.key, prefix) { infos.append(info) }
                        }
                        infos.sort { ObjectKey.precedes($0.key, $1.key) }
                        return ObjectListing(objects: infos, nextContinuationToken: nil)
                    }
                }
                """)
            let products = CommandRunner.productsFolder
            let output = sandbox.path("libFolderStorage.so")
            // Blocking: a `static let` initializer cannot await, and this runs once per process.
            let result = CommandRunner.spawnBlocking(swiftc, [
                "-emit-library", "-parse-as-library", "-module-name", "FolderStorage", "-swift-version", "6",
                "-I", "\(products)/Modules", "-L", products, "-lPlugboardAPI",
                "-Xlinker", "-rpath", "-Xlinker", products, "-o", output, source,
            ], in: sandbox.root, environment: ["HOME": sandbox.home])
            guard result.status == 0, sandbox.exists(output) else {
                return .failure(FixtureError("could not build the FolderStorage fixture:\n\(result)"))
            }
            return .success(output)
        } catch let error as FixtureError {
            return .failure(error)
        } catch {
            return .failure(FixtureError("\(error)"))
        }
    }

    /// The `swiftc` on `PATH`, else the toolchain's usual place.
    private static var swiftc: String {
        for dir in (CommandRunner.processEnvironment["PATH"] ?? "").split(separator: ":")
        where access("\(dir)/swiftc", X_OK) == 0 {
            return "\(dir)/swiftc"
        }
        return "/opt/swift/usr/bin/swiftc"
    }
}
