import PlugboardAPI

/// The files `plugboard new-plugin` writes: a SwiftPM package that builds `lib<Name>.so`
/// against this checkout's PlugboardAPI, with an in-memory `ObjectStorage` to start from
/// and tests that run the conformance suite and check the built file's plugin header.
struct PluginScaffold {
    /// The plugin's name: a Swift identifier, also the module, product and library name.
    let name: String
    /// The absolute path of the Plugboard checkout the package depends on.
    let sdk: String
    /// The absolute path of the package's folder.
    let directory: String
    /// The header the plugin carries, as a literal (PluginHeader.expected when scaffolded).
    let header: PluginHeader

    /// Relative path and contents of every file, in the order they are written.
    var files: [(path: String, text: String)] {
        [
            ("Package.swift", packageManifest),
            ("Sources/\(name)/\(name)Plugin.swift", pluginSource),
            ("Sources/\(name)/\(name)ObjectStorage.swift", storageSource),
            ("Tests/\(name)Tests/\(name)Tests.swift", testSource),
            ("plugins.snippet.json", manifestSnippet),
            ("README.md", readme),
            (".gitignore", ".build/\n.swiftpm/\n"),
        ]
    }

    /// The package identity SwiftPM gives a path dependency: its folder's name.
    static func packageIdentity(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    var headerLiteral: String {
        "(0x\(hexGrouped(PluginHeader.magic)), \(header.layoutVersion), \(header.abiVersion), \(header.apiMajor), \(header.apiMinor))"
    }

    private func hexGrouped(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        return padded.prefix(4) + "_" + padded.suffix(4)
    }

    /// A string as a Swift or JSON string literal (paths may hold quotes or backslashes).
    private func quoted(_ s: String) -> String {
        ConfigValue.string(s).description
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

        let api: Target.Dependency = .product(name: "PlugboardAPI", package: \#(quoted(Self.packageIdentity(apiPath))))
        // The root Plugboard package (named "Plugboard"; SwiftPM knows a path dependency by
        // its folder's name): the test kit, with an in-memory storage and the conformance suite.
        let testing: Target.Dependency = .product(name: "PlugboardTesting", package: \#(quoted(Self.packageIdentity(sdk))))

        let package = Package(
            name: "\#(name)",
            products: [
                .library(name: "\#(name)", type: .dynamic, targets: ["\#(name)"]),
            ],
            dependencies: [
                .package(path: \#(quoted(apiPath))),
                .package(path: \#(quoted(sdk))),
            ],
            targets: [
                .target(name: "\#(name)", dependencies: [api, testing]),
                .testTarget(name: "\#(name)Tests", dependencies: ["\#(name)", api, testing]),
            ]
        )

        for target in package.targets {
            target.swiftSettings = (target.swiftSettings ?? []) + [
                .swiftLanguageMode(.v6),
                .enableUpcomingFeature("ExistentialAny"),
            ]
        }

        """#
    }

    var pluginSource: String {
        #"""
        import PlugboardAPI

        // The plugin header (docs/PLUGIN_HEADER.md in the Plugboard checkout): magic, header
        // layout, plugin ABI, PlugboardAPI major and minor version. The host reads it from the
        // file before loading anything. It must be a literal written here (a constant from
        // another module is not allowed in a constant expression); the tests compare it with
        // PluginHeader.expected, so rebuilding against a newer API tells you to update it.
        @section("plugboard_header") @used
        let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = \#(headerLiteral)

        /// The one C symbol the host calls.
        @c(plugboard_plugin_entry)
        public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
            PluginEntry.run(op, arg, \#(name)Plugin.self)
        }

        /// `\#(name)`: registers an `ObjectStorage`.
        public enum \#(name)Plugin: Plugin {
            public static let name = "\#(name)"
            public static let version = "0.1.0"
            public static let services = ["PlugboardAPI.ObjectStorage"]

            public static func register(into registrar: PluginRegistrar) throws {
                // The plugin's entry in plugins.json may carry a "config" object; read it
                // from registrar.config (see Plugins/MemoryStorage in the Plugboard checkout).
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
        import PlugboardTesting

        /// The plugin's `ObjectStorage`. It starts as a wrapper of PlugboardTesting's
        /// `InMemoryObjectStorage`, which passes the whole conformance suite; replace the
        /// forwarding calls with your backend, and keep `swift test` green.
        ///
        /// Rules every implementation follows (see `ObjectStorage` in PlugboardAPI): check
        /// arguments with `ObjectKey.validate`, `ObjectContentType.resolve` and
        /// `ObjectMetadata.validate`; the ETag is the lowercase hex MD5 of the data; listings
        /// are in UTF-8 byte order and page with `ListingRequest`'s continuation tokens; errors
        /// are `PlugboardError`s (`storage.not_found`, `storage.unavailable`, ...).
        public final class \#(name)ObjectStorage: ObjectStorage {
            private let base = InMemoryObjectStorage()

            public init() {}

            public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
                try await base.put(key, data: data, contentType: contentType, metadata: metadata)
            }

            public func get(_ key: String) async throws -> StoredObject {
                try await base.get(key)
            }

            public func head(_ key: String) async throws -> ObjectInfo {
                try await base.head(key)
            }

            public func delete(_ key: String) async throws {
                try await base.delete(key)
            }

            public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
                try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
            }
        }

        """#
    }

    var testSource: String {
        #"""
        import Foundation
        import PlugboardAPI
        import PlugboardTesting
        import Testing
        import \#(name)

        @Suite struct \#(name)Tests {
            /// The whole ObjectStorage conformance suite, on a fresh storage.
            @Test func storage_passesTheConformanceSuite() async throws {
                let report = await ObjectStorageConformance(makeStorage: { \#(name)ObjectStorage() }).run()
                #expect(report.allPassed, "\(report)")
            }

            /// What `plugboard inspect` and `plugboard services` will show.
            @Test func plugin_declaresItsNameAndService() {
                #expect(\#(name)Plugin.name == "\#(name)")
                #expect(\#(name)Plugin.services == ["PlugboardAPI.ObjectStorage"])
            }

            /// The handshake the host performs first: the versions compiled into the plugin
            /// match the PlugboardAPI it builds against.
            @Test func entryPoint_answersTheHandshake() throws {
                var words = [UInt64](repeating: 0, count: 8)
                let status = words.withUnsafeMutableBytes { plugboardPluginEntry(1, $0.baseAddress) }
                #expect(status == 0)
                try PluginHandshake(words: words, plugin: "\#(name)").check(plugin: "\#(name)")
            }

            /// The built lib\#(name).so carries a plugboard_header section equal to the header
            /// this PlugboardAPI expects; the host refuses the file before loading it otherwise.
            @Test func builtLibrary_carriesTheExpectedPluginHeader() throws {
                let library = Self.productsFolder + "/lib\#(name).so"
                let data = try #require(FileManager.default.contents(atPath: library),
                                        "\(library) not found; `swift build` builds it")
                let section = try #require(Self.section(PluginHeader.sectionName, in: [UInt8](data)),
                                           "no \(PluginHeader.sectionName) section in \(library)")
                #expect(section == PluginHeader.expected.bytes,
                        "the header literal in \#(name)Plugin.swift is out of date: expected \(PluginHeader.expected), found \(section)")
                let header = try PluginHeader(bytes: section, plugin: "\#(name)")
                try header.checkCompatible(plugin: "\#(name)")
            }

            /// The folder the test runner (and every product of the package) is built into.
            static var productsFolder: String {
                var url = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
                while url.path.contains(".xctest") { url = url.deletingLastPathComponent() }
                return url.path
            }

            /// The bytes of an ELF64 little-endian file's section called `name`.
            static func section(_ name: String, in b: [UInt8]) -> [UInt8]? {
                func int(_ at: Int, _ size: Int) -> Int {
                    (0..<size).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) }
                }
                guard b.count >= 64, b[0..<4] == [0x7F, 0x45, 0x4C, 0x46], b[4] == 2, b[5] == 1 else { return nil }
                let shoff = int(0x28, 8), shentsize = int(0x3A, 2), shnum = int(0x3C, 2), shstrndx = int(0x3E, 2)
                guard shoff > 0, shentsize >= 64, shstrndx < shnum, shoff + shnum * shentsize <= b.count else { return nil }
                func header(_ i: Int) -> (name: Int, offset: Int, size: Int) {
                    let h = shoff + i * shentsize
                    return (int(h, 4), int(h + 0x18, 8), int(h + 0x20, 8))
                }
                let names = header(shstrndx)
                for i in 0..<shnum {
                    let h = header(i)
                    var end = names.offset + h.name
                    while end < b.count && b[end] != 0 { end += 1 }
                    guard names.offset + h.name <= end,
                          String(decoding: b[(names.offset + h.name)..<end], as: UTF8.self) == name,
                          h.offset + h.size <= b.count else { continue }
                    return Array(b[h.offset..<(h.offset + h.size)])
                }
                return nil
            }
        }

        """#
    }

    var manifestSnippet: String {
        let library = "\(directory)/.build/release/lib\(name).so"
        return """
        {
          "name": \(quoted(name)),
          "path": \(quoted(library)),
          "required": true
        }

        """
    }

    var readme: String {
        #"""
        # \#(name)

        A Plugboard plugin: `lib\#(name).so` registers an `ObjectStorage` (for now an
        in-memory one; see `Sources/\#(name)/\#(name)ObjectStorage.swift`). Written by
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

        The tests run the ObjectStorage conformance suite on `\#(name)ObjectStorage`,
        check the plugin's name and services, answer the host's handshake through
        `plugboard_plugin_entry`, and read the built `lib\#(name).so` to check that its
        `plugboard_header` section equals `PluginHeader.expected`.

        ## Use it

        Add the entry in `plugins.snippet.json` to the `plugins` array of the host's
        `plugins.json` (the path is absolute), then:

        ```sh
        plugboard check                 # \#(name) should be "active"
        plugboard services              # PlugboardAPI.ObjectStorage from \#(name)
        plugboard inspect .build/release/lib\#(name).so
        ```

        If the host's PlugboardAPI changes version, rebuild; if `swift test` then reports
        the header out of date, update the literal in `Sources/\#(name)/\#(name)Plugin.swift`
        (or scaffold again with `plugboard new-plugin`).

        """#
    }
}
