import PlugboardAPI

/// The files `plugboard new-plugin` writes: a SwiftPM package that builds `lib<Name>.so`
/// against this checkout's PlugboardAPI, with an in-memory `ObjectStorage` to start from
/// (or, with `--layer`, a layer forwarding every requirement to the storage it wraps) and
/// tests that run the conformance suite and check the built file's plugin header.
struct PluginScaffold {
    /// The plugin's name: a Swift identifier, also the module, product and library name.
    let name: String
    /// The absolute path of the Plugboard checkout the package depends on.
    let sdk: String
    /// The absolute path of the package's folder.
    let directory: String
    /// The header the plugin carries, as a literal (PluginHeader.expected when scaffolded).
    let header: PluginHeader
    /// Whether the plugin is a layer over another plugin's `ObjectStorage` (`--layer`).
    var layer = false

    /// Relative path and contents of every file, in the order they are written.
    var files: [(path: String, text: String)] {
        [
            ("Package.swift", packageManifest),
            ("Sources/\(name)/\(name)Plugin.swift", layer ? layerPluginSource : pluginSource),
            layer ? ("Sources/\(name)/\(name)Layer.swift", layerSource) : ("Sources/\(name)/\(name)ObjectStorage.swift", storageSource),
            ("Tests/\(name)Tests/\(name)Tests.swift", layer ? layerTestSource : testSource),
            ("plugins.snippet.json", manifestSnippet),
            ("README.md", readme),
            (".gitignore", ".build/\n.swiftpm/\n"),
        ]
    }

    var packageManifest: String {
        let apiPath = "\(sdk)/Sources/PlugboardAPI"
        return #"""
        // swift-tools-version: 6.2
        // The \#(name) plugin for Plugboard: builds lib\#(name).so, which a Plugboard host
        // loads from plugins.json. Written by `plugboard new-plugin`.
        //
        // PlugboardAPI comes from the host's checkout through its dynamic product, so the
        // plugin links libPlugboardAPI.so and, once loaded, shares the host's copy of every
        // API type. Build with the same Swift toolchain as the host.
        import PackageDescription

        let api: Target.Dependency = .product(name: "PlugboardAPI", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(apiPath))))
        // The root Plugboard package (named "Plugboard"; SwiftPM knows a path dependency by
        // its folder's name): SHA-256/MD5 for the plugin, and the test kit, which loads the
        // built .so through the host's own checks and runs the conformance suite on it.
        let crypto: Target.Dependency = .product(name: "PlugboardCrypto", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(sdk))))
        let testing: Target.Dependency = .product(name: "PlugboardTesting", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(sdk))))

        let package = Package(
            name: "\#(name)",
            products: [
                .library(name: "\#(name)", type: .dynamic, targets: ["\#(name)"]),
            ],
            dependencies: [
                .package(path: \#(ScaffoldText.quoted(apiPath))),
                .package(path: \#(ScaffoldText.quoted(sdk))),
            ],
            targets: [
                .target(name: "\#(name)", dependencies: [api, crypto]),
                // The tests load lib\#(name).so as the host does, so they do not link the
                // plugin's module themselves (two copies of it in one process).
                .testTarget(name: "\#(name)Tests", dependencies: [api, testing]),
            ]
        )

        \#(ScaffoldText.strictSettings)
        """#
    }

    var pluginSource: String {
        #"""
        import PlugboardAPI

        \#(ScaffoldText.headerAndEntryPoint(header, pluginType: "\(name)Plugin"))

        /// `\#(name)`: registers an `ObjectStorage`.
        public enum \#(name)Plugin: Plugin {
            public static let name = "\#(name)"
            public static let version = "0.1.0"
            public static let services = ["PlugboardAPI.ObjectStorage"]

            public static func register(into registrar: PluginRegistrar) throws {
                // The plugin's entry in plugins.json may carry a "config" object; read it
                // from registrar.config (see Plugins/MemoryStorage in the Plugboard checkout).
                // Errors of your own (`acme.quota_exceeded`) get an HTTP status with
                // registrar.mapErrors([...]) (PlugboardAPI 1.6): each mapping is a service of
                // the plugin too (PlugboardAPI.PlugboardError.Mapping), which plugboard
                // services lists beside this one.
                try registrar.register((any ObjectStorage).self, implementation: \#(name)ObjectStorage.self) { _ in
                    \#(name)ObjectStorage()
                }
            }
        }

        """#
    }

    var storageSource: String {
        #"""
        import PlugboardAPI
        import PlugboardCrypto
        import Synchronization

        /// The plugin's `ObjectStorage`: objects kept in memory, to start from. It passes the
        /// whole conformance suite as written; replace the dictionary with your backend and
        /// keep `swift test` green.
        ///
        /// Rules every implementation follows (see `ObjectStorage` in PlugboardAPI): check
        /// arguments with `ObjectKey.validate`, `ObjectContentType.resolve` and
        /// `ObjectMetadata.validate`, in that order; the ETag is the lowercase hex MD5 of the
        /// data; keys are byte strings (compare and order their UTF-8, never `String`);
        /// listings page with `ListingRequest`'s continuation tokens; errors are
        /// `PlugboardError`s with `storage.*` codes.
        public final class \#(name)ObjectStorage: ObjectStorage {
            /// Objects by the UTF-8 bytes of their keys: `String ==` would merge keys that
            /// are canonically equivalent but different bytes.
            private let objects = Mutex<[[UInt8]: StoredObject]>([:])

            public init() {}

            public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
                try ObjectKey.validate(key)
                let storedType = try ObjectContentType.resolve(contentType)
                try ObjectMetadata.validate(metadata)
                let info = ObjectInfo(key: key, size: data.count, etag: try Self.etag(of: data, key: key),
                                      contentType: storedType, lastModified: Timestamp.now(), metadata: metadata)
                objects.withLock { $0[Array(key.utf8)] = StoredObject(info: info, data: data) }
                return info
            }

            /// The streaming put (PlugboardAPI 1.2): the body is collected (this storage is
            /// memory), then the condition is checked and the object stored under the lock,
            /// in one step, so that of two racing `.absent` puts exactly one wins. A backend
            /// that streams writes the chunks as they come and stores nothing unless the
            /// body ends whole (`ObjectBody.forEachChunk(upTo:_:)` checks its length).
            public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                            condition: WriteCondition) async throws -> ObjectInfo {
                try ObjectKey.validate(key)
                let storedType = try ObjectContentType.resolve(contentType)
                try ObjectMetadata.validate(metadata)
                let data = try await body.collect(upTo: ObjectBody.wholeObjectLimit)
                let info = ObjectInfo(key: key, size: data.count, etag: try Self.etag(of: data, key: key),
                                      contentType: storedType, lastModified: Timestamp.now(), metadata: metadata)
                try objects.withLock { (objects) throws(PlugboardError) in
                    let current = objects[Array(key.utf8)]?.info.etag
                    switch condition {
                    case .none: break
                    case .absent:
                        if current != nil {
                            throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: true, currentETag: current)
                        }
                    case .matches(let etag):
                        if current != etag {
                            throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: current != nil, currentETag: current)
                        }
                    @unknown default:
                        throw PlugboardError.conditionUnsupported(key: key, condition: condition, backend: "\#(name)",
                                                                  hint: "Rebuild the plugin against the PlugboardAPI that defines the condition.")
                    }
                    objects[Array(key.utf8)] = StoredObject(info: info, data: data)
                }
                return info
            }

            /// The ranged get (PlugboardAPI 1.2): the bytes `range` selects, with the whole
            /// object's info.
            public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
                try ObjectKey.validate(key)
                try range?.validate()
                return try ObjectStream(try await get(key), key: key, range: range)
            }

            public func get(_ key: String) async throws -> StoredObject {
                try ObjectKey.validate(key)
                guard let object = objects.withLock({ $0[Array(key.utf8)] }) else {
                    throw PlugboardError.objectNotFound(key: key)
                }
                return object
            }

            public func head(_ key: String) async throws -> ObjectInfo {
                try await get(key).info
            }

            public func delete(_ key: String) async throws {
                try ObjectKey.validate(key)
                _ = objects.withLock { $0.removeValue(forKey: Array(key.utf8)) }
            }

            public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
                let request = try ListingRequest(prefix: prefix, limit: limit, continuationToken: continuationToken)
                let prefixBytes = Array(request.prefix.utf8)
                let after = request.startAfter.map { Array($0.utf8) }
                let matching = objects.withLock { all in
                    all.filter { key, _ in
                        key.starts(with: prefixBytes) && (after.map { $0.lexicographicallyPrecedes(key) } ?? true)
                    }.map(\.value.info)
                }.sorted { ObjectKey.precedes($0.key, $1.key) }
                let page = Array(matching.prefix(request.limit))
                let more = matching.count > page.count
                return ObjectListing(objects: page,
                                     nextContinuationToken: more ? page.last.map { ListingRequest.continuationToken(after: $0.key) } : nil)
            }

            private static func etag(of data: [UInt8], key: String) throws -> String {
                do {
                    return Hex.encode(try MD5Hasher.hash(data))
                } catch {
                    // libcrypto could not be loaded: a backend failure, under the storage's own code.
                    throw PlugboardError(.storageFailed, "could not compute the ETag of object \(PlugboardError.quoted(key))",
                                         detail: error.message, hint: error.hint, underlying: error)
                }
            }
        }

        """#
    }

    var testSource: String {
        #"""
        import PlugboardAPI
        import PlugboardTesting
        import Testing

        /// These tests load the built lib\#(name).so exactly as the `plugboard` host does
        /// (file and ELF checks, the plugin header, the toolchain stamp, dlopen, the
        /// handshake, registration), so a refusal here is the one the host would print.
        @Suite struct \#(name)Tests {
            /// What `plugboard inspect` and `plugboard services` will show.
            @Test func plugin_loadsThroughTheHostsChecks_andDeclaresItsService() async throws {
                let plugin = try await PluginUnderTest.load(product: "\#(name)")
                #expect(plugin.version == "0.1.0")
                // Contains, not equals: registrar.mapErrors adds a service of its own.
                #expect(plugin.services.contains("PlugboardAPI.ObjectStorage"))
                \#(ScaffoldText.headerCheck(name))
            }

            /// The whole ObjectStorage conformance suite, on the storage the loaded plugin registered.
            @Test func storage_passesTheConformanceSuite() async throws {
                let plugin = try await PluginUnderTest.load(product: "\#(name)")
                let report = await plugin.objectStorageConformance().run()
                \#(ScaffoldText.reportCheck)
                await plugin.shutdown()
            }
        }

        """#
    }

    var manifestSnippet: String {
        let library = "\(directory)/.build/release/lib\(name).so"
        return """
        {
          "name": \(ScaffoldText.quoted(name)),
          "path": \(ScaffoldText.quoted(library)),\(layer ? "\n  \"wraps\": \"FileStorage\"," : "")
          "required": true
        }

        """
    }

    var storageIntroduction: String {
        "A Plugboard plugin: `lib\(name).so` registers an `ObjectStorage` (for now an\nin-memory one; see `Sources/\(name)/\(name)ObjectStorage.swift`)."
    }

    var readme: String {
        #"""
        # \#(name)

        \#(layer ? layerIntroduction : storageIntroduction) Written by
        `plugboard new-plugin` against the Plugboard checkout at `\#(sdk)`
        (PlugboardAPI \#(header.apiMajor).\#(header.apiMinor), plugin ABI \#(header.abiVersion)).

        Build it with the same Swift toolchain as the `plugboard` host: Swift has no stable
        ABI on Linux, and the host refuses a plugin from another compiler.

        ## Build

        ```sh
        swift build -c release        # .build/release/lib\#(name).so
        ```

        ## Test

        ```sh
        swift test
        ```

        The tests load the built `lib\#(name).so` through the host's own checks
        (`PluginUnderTest` from PlugboardTesting), check what it declares and that this
        host accepts its `plugboard_header`, and run the ObjectStorage conformance suite on
        the storage it registered; a failing rule is reported by name. A rule that a newer
        PlugboardAPI than the header declares introduced is a warning, saying what to
        implement and which version to declare then (PLUGIN_GUIDE.md, "Upgrading the SDK").

        ## Use it

        Add the entry in `plugins.snippet.json` to the `plugins` array of the host's
        `plugins.json` (the path is absolute\#(layer ? "; `wraps` names the entry of the storage it wraps, FileStorage in the shipped manifest" : "")), then:

        ```sh
        plugboard check                 # \#(name) should be "active"
        plugboard services              # PlugboardAPI.ObjectStorage from \#(name)
        plugboard inspect .build/release/lib\#(name).so
        ```

        If the host's PlugboardAPI changes version, rebuild: the plugin keeps loading and its
        tests keep passing with the version its header declares. To use what a newer version
        added, implement it, then raise the minor version in the header literal in
        `Sources/\#(name)/\#(name)Plugin.swift` (the tests then hold it to that version's
        rules).

        """#
    }
}
