import PlugboardAPI

/// The files `plugboard new-contract` writes: a contract package (a dynamic library that
/// holds only the `NAME` protocol) and a package with two plugins around it, a provider of
/// `NAME` and a consumer that resolves it, with a test that loads both into one container.
/// Every dependency is an absolute path (the checkout, its PlugboardAPI, the contract), so
/// the packages build wherever they were written, unlike the in-repo example's `../..`.
struct ContractScaffold {
    /// The protocol's name; the packages and plugins are named after it.
    let name: String
    /// The absolute path of the Plugboard checkout the packages depend on.
    let sdk: String
    /// The absolute path of the folder holding both packages.
    let directory: String
    /// The header the plugins carry, as a literal (PluginHeader.expected when scaffolded).
    let header: PluginHeader

    var contract: String { "\(name)Contract" }
    var plugins: String { "\(name)Plugins" }
    var provider: String { "\(name)Provider" }
    var consumer: String { "\(name)Consumer" }

    /// The module names the scaffold declares, each of which must be free.
    static func moduleNames(_ name: String) -> [String] {
        ["\(name)Contract", "\(name)Plugins", "\(name)Provider", "\(name)Consumer", "\(name)PluginsTests"]
    }

    /// Relative path and contents of every file, in the order they are written.
    var files: [(path: String, text: String)] {
        [
            ("\(contract)/Package.swift", contractManifest),
            ("\(contract)/Sources/\(contract)/\(name).swift", contractSource),
            ("\(plugins)/Package.swift", pluginsManifest),
            ("\(plugins)/Sources/\(provider)/\(provider)Plugin.swift", providerSource),
            ("\(plugins)/Sources/\(consumer)/\(consumer)Plugin.swift", consumerSource),
            ("\(plugins)/Tests/\(plugins)Tests/\(plugins)Tests.swift", testSource),
            ("plugins.snippet.json", manifestSnippet),
            ("README.md", readme),
            (".gitignore", ".build/\n.swiftpm/\n"),
        ]
    }

    var contractManifest: String {
        #"""
        // swift-tools-version: 6.2
        // The \#(name) contract: a dynamic library that holds only the \#(name) protocol, so that
        // the plugin providing the service and the plugins using it share ONE type. A target
        // inside a plugin's own package would be linked statically into each plugin, giving
        // each its own \#(name) type, and resolving across plugins would fail (docs/PLUGIN_GUIDE.md
        // in the Plugboard checkout, "Service contracts beyond ObjectStorage"). Written by
        // `plugboard new-contract`.
        import PackageDescription

        let package = Package(
            name: "\#(contract)",
            products: [
                .library(name: "\#(contract)", type: .dynamic, targets: ["\#(contract)"]),
            ],
            targets: [
                .target(
                    name: "\#(contract)",
                    swiftSettings: [
                        // Additive changes to the contract (a requirement with a default)
                        // keep plugins built against the older version working, as
                        // PlugboardAPI does.
                        .unsafeFlags(["-enable-library-evolution"]),
                    ]),
            ]
        )

        \#(ScaffoldText.strictSettings)
        """#
    }

    var contractSource: String {
        #"""
        /// The \#(name) service: \#(provider) provides it and \#(consumer) resolves it. Both
        /// import this module from lib\#(contract).so, so `(any \#(name)).self` is one type in
        /// the host's container, named "\#(contract).\#(name)" by `plugboard services`.
        ///
        /// Change it as PlugboardAPI changes: a new requirement comes with a default
        /// implementation in an extension, so plugins built against the older contract keep
        /// loading; removing or changing a requirement breaks every plugin built against it.
        public protocol \#(name): Sendable {
            /// The answer to `request`; replace with your service's requirements.
            func respond(to request: Swift.String) -> Swift.String
        }

        """#
    }

    var pluginsManifest: String {
        let apiPath = "\(sdk)/Sources/PlugboardAPI"
        let contractPath = "\(directory)/\(contract)"
        return #"""
        // swift-tools-version: 6.2
        // Two plugins around the \#(contract) package, each building lib<Name>.so:
        // - \#(provider) registers an `any \#(name)` (\#(contract).\#(name));
        // - \#(consumer) registers what whichever `any \#(name)` the container holds answers.
        // Both link lib\#(contract).so, which the host's loader finds beside them, checks and
        // caches with them. Written by `plugboard new-contract`; every path is absolute, so
        // the package builds where it is. Build with the same Swift toolchain as the host.
        import PackageDescription

        let api: Target.Dependency = .product(name: "PlugboardAPI", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(apiPath))))
        let contract: Target.Dependency = .product(name: "\#(contract)", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(contractPath))))
        // The test kit, from the root Plugboard package: it loads the built .so files through
        // the host's own checks into one container.
        let testing: Target.Dependency = .product(name: "PlugboardTesting", package: \#(ScaffoldText.quoted(ScaffoldText.packageIdentity(sdk))))

        let package = Package(
            name: "\#(plugins)",
            products: [
                .library(name: "\#(provider)", type: .dynamic, targets: ["\#(provider)"]),
                .library(name: "\#(consumer)", type: .dynamic, targets: ["\#(consumer)"]),
            ],
            dependencies: [
                .package(path: \#(ScaffoldText.quoted(apiPath))),
                .package(path: \#(ScaffoldText.quoted(sdk))),
                .package(path: \#(ScaffoldText.quoted(contractPath))),
            ],
            targets: [
                .target(name: "\#(provider)", dependencies: [api, contract]),
                .target(name: "\#(consumer)", dependencies: [api, contract]),
                // The tests load the plugins as the host does, so they link neither plugin's
                // module nor the contract themselves (two copies of a type in one process).
                .testTarget(name: "\#(plugins)Tests", dependencies: [api, testing]),
            ]
        )

        \#(ScaffoldText.strictSettings)
        """#
    }

    var providerSource: String {
        pluginSource(provider, doc: "/// Provides the contract's `\(name)`. Config: `prefix` (a string, default \"\(provider)\").",
                     service: "\(contract).\(name)", key: "prefix", default: provider,
                     registration: """
                         try registrar.register((any \(contract).\(name)).self, implementation: Provided\(name).self) { _ in
                                     Provided\(name)(prefix: prefix)
                                 }
                         """,
                     after: #"""

                         /// The implementation: replace with your own.
                         struct Provided\#(name): \#(contract).\#(name) {
                             let prefix: Swift.String

                             func respond(to request: Swift.String) -> Swift.String { "\(prefix) answers \(request)" }
                         }

                         """#)
    }

    var consumerSource: String {
        pluginSource(consumer, doc: """
                         /// Uses whichever `\(name)` the container holds: registers its answer to `request`
                         /// (config, a string, default "hello") as a `String` named "\(consumer)". The host
                         /// builds every singleton once at load, so the provider is loaded first: list it
                         /// before this plugin in plugins.json, in this plugin's `requires`.
                         """,
                     service: "Swift.String", key: "request", default: "hello",
                     registration: """
                         try registrar.register(Swift.String.self, name: "\(consumer)") { resolver in
                                     try resolver.resolve((any \(contract).\(name)).self).respond(to: request)
                                 }
                         """,
                     after: "")
    }

    /// A plugin's one file: the header, the entry point, and a Plugin type that reads one
    /// string from its config (`key`, with a default) and makes one registration
    /// (`registration`, its lines after the first indented for the function body).
    private func pluginSource(_ plugin: String, doc: String, service: String, key: String, default value: String,
                              registration: String, after: String) -> String {
        #"""
        import \#(contract)
        import PlugboardAPI

        \#(ScaffoldText.headerAndEntryPoint(header, pluginType: "\(plugin)Plugin"))

        \#(doc)
        public enum \#(plugin)Plugin: PlugboardAPI.Plugin {
            public static let name = "\#(plugin)"
            public static let version = "0.1.0"
            public static let services = ["\#(service)"]

            public static func register(into registrar: PlugboardAPI.PluginRegistrar) throws {
                try registrar.config.requireOnly(["\#(key)"])
                let \#(key) = try registrar.config.string("\#(key)", default: nil) ?? "\#(value)"
                \#(registration)
            }
        }
        \#(after)
        """#
    }

    var testSource: String {
        #"""
        import PlugboardAPI
        import PlugboardTesting
        import Testing

        /// These tests load the built lib\#(provider).so and lib\#(consumer).so exactly as the
        /// `plugboard` host does, into one container, so the consumer resolves the provider's
        /// `\#(name)` through lib\#(contract).so as it will in the host.
        @Suite struct \#(plugins)Tests {
            @Test func consumer_resolvesTheProvidersService_throughTheContract() async throws {
                let plugins = try await PluginUnderTest.load(products: ["\#(provider)", "\#(consumer)"],
                                                             configs: ["\#(provider)": ["prefix": .string("Test")]])
                // Contains, not equals: registrar.mapErrors adds a service of its own.
                #expect(plugins[0].services.contains("\#(contract).\#(name)"))
                #expect(plugins[1].services.contains("Swift.String"))
                for plugin in plugins {
                    // The host loads any minor version up to its own (docs/PLUGIN_HEADER.md).
                    let header = try #require(plugin.header, "lib\(plugin.name).so has no plugboard_header section")
                    #expect(throws: Never.self) { try header.checkCompatible(plugin: plugin.name) }
                }
                // The container is shared: the consumer's String, built from the provider's service.
                let answer = try plugins[1].container.resolve(String.self, name: "\#(consumer)")
                #expect(answer == "Test answers hello")
                await plugins[1].container.shutdown()
            }

            @Test func consumer_withoutAProvider_failsToLoad() async throws {
                do throws(PlugboardError) {
                    _ = try await PluginUnderTest.load(products: ["\#(consumer)"])
                    Issue.record("\#(consumer) loaded without a \#(name) to resolve")
                } catch {
                    // The consumer's singleton is built at load; its resolve found nothing.
                    var cause = error
                    while let next = cause.underlying as? PlugboardError { cause = next }
                    #expect(cause.code == .notRegistered, "\(error)")
                }
            }
        }

        """#
    }

    var manifestSnippet: String {
        let folder = "\(directory)/\(plugins)/.build/release"
        return """
        [
          {
            "name": \(ScaffoldText.quoted(provider)),
            "path": \(ScaffoldText.quoted("\(folder)/lib\(provider).so"))
          },
          {
            "name": \(ScaffoldText.quoted(consumer)),
            "path": \(ScaffoldText.quoted("\(folder)/lib\(consumer).so")),
            "requires": [\(ScaffoldText.quoted(provider))]
          }
        ]

        """
    }

    var readme: String {
        #"""
        # \#(name)

        A service contract for Plugboard and two plugins around it, written by
        `plugboard new-contract` against the Plugboard checkout at `\#(sdk)`
        (PlugboardAPI \#(header.apiMajor).\#(header.apiMinor), plugin ABI \#(header.abiVersion)):

        - `\#(contract)/`: the contract package, a dynamic library holding only the `\#(name)`
          protocol. Every plugin that provides or uses the service depends on this package
          and imports `\#(contract)`; a plugin that copies the protocol instead declares
          another type, which nobody resolves.
        - `\#(plugins)/`: `lib\#(provider).so`, which registers an `any \#(name)`, and
          `lib\#(consumer).so`, which resolves it, with a test loading both.

        A plugin in another package uses the contract the same way: depend on
        `\#(directory)/\#(contract)` by path and on the checkout's `Sources/PlugboardAPI`.
        Build everything with the same Swift toolchain as the `plugboard` host.

        ## Build and test

        ```sh
        cd \#(plugins)
        swift build -c release        # .build/release/lib\#(provider).so, lib\#(consumer).so, lib\#(contract).so
        swift test
        ```

        The tests load the built libraries through the host's own checks into one container
        (`PluginUnderTest.load(products:)` from PlugboardTesting) and resolve the consumer's
        `String`, made from the provider's `\#(name)`.

        ## Use it

        Add the two entries in `plugins.snippet.json` to the `plugins` array of the host's
        `plugins.json` (the paths are absolute; the provider comes first), then:

        ```sh
        plugboard check                 # \#(provider) and \#(consumer) should be "active"
        plugboard services              # \#(contract).\#(name) from \#(provider)
        ```

        `swift test` builds in debug; the snippet names the release build, so run
        `swift build -c release` again after a change (`plugboard check` warns when a newer
        build sits beside the file it loaded).

        """#
    }
}
