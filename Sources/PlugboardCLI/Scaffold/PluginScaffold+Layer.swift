import PlugboardAPI

/// `plugboard new-plugin NAME --layer`: a plugin that wraps the `ObjectStorage` of the plugin
/// its manifest entry names in `wraps`, forwarding every requirement, and tests that load it
/// over MemoryStorage through the test kit.
extension PluginScaffold {
    var layerIntroduction: String {
        "A Plugboard plugin: `lib\(name).so` registers a layer over the `ObjectStorage` of the\nplugin its manifest entry `wraps` (for now one that forwards every call; see\n`Sources/\(name)/\(name)Layer.swift`)."
    }

    var layerPluginSource: String {
        #"""
        import PlugboardAPI

        \#(ScaffoldText.headerAndEntryPoint(header, pluginType: "\(name)Plugin"))

        /// `\#(name)`: a layer over the `ObjectStorage` of the plugin its manifest entry
        /// names in `"wraps"`.
        public enum \#(name)Plugin: Plugin {
            public static let name = "\#(name)"
            public static let version = "0.1.0"
            public static let services = ["PlugboardAPI.ObjectStorage"]

            public static func register(into registrar: PluginRegistrar) throws {
                // The plugin's entry in plugins.json may carry a "config" object; read it
                // from registrar.config (see Plugins/QuotaStorage in the Plugboard checkout).
                // Errors of your own (`acme.refused`) get an HTTP status with
                // registrar.mapErrors([...]) (PlugboardAPI 1.6): each mapping is a service of
                // the plugin too (PlugboardAPI.PlugboardError.Mapping), which plugboard
                // services lists beside this one.
                //
                // `below` is the storage of the plugin named in "wraps", in the generation
                // being built; resolving ObjectStorage here instead would find this layer.
                try registrar.registerLayer((any ObjectStorage).self) { _, below in
                    \#(name)Layer(below: below)
                }
            }
        }

        """#
    }

    var layerSource: String {
        #"""
        import PlugboardAPI

        /// The plugin's layer: every requirement of `ObjectStorage` goes to the storage below
        /// as it is. Change the calls your layer is about (check a put's content type, count
        /// bytes, log); keep forwarding the others, each to the same requirement below.
        ///
        /// Why every one (PLUGIN_GUIDE.md, "What a layer must forward"): a requirement the
        /// layer does not implement gets PlugboardAPI's default, which is right for a storage
        /// of its own but wrong over another: the default `get(_:range:)` reads the whole
        /// object with `get(_:)` and slices it (every GET held in memory), the default
        /// `getWithoutWaiting` answers nil (the server waits for what the storage below had at
        /// once), the default streamed `put` collects the body, and refuses every condition
        /// with `storage.unsupported`. The conformance rule `layer_keeps_reads_streamed`
        /// catches the reads.
        public final class \#(name)Layer: ObjectStorage {
            /// The storage of the plugin this layer wraps.
            let below: any ObjectStorage

            public init(below: any ObjectStorage) {
                self.below = below
            }

            public func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
                try await below.put(key, data: data, contentType: contentType, metadata: metadata)
            }

            /// The streamed put (PlugboardAPI 1.2), with its condition: the body goes down as
            /// it comes. To look at its bytes without holding them, hand down
            /// `body.mapChunks { chunk in ...; return chunk }` (PlugboardAPI 1.6).
            public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                            condition: WriteCondition) async throws -> ObjectInfo {
                try await below.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
            }

            public func get(_ key: String) async throws -> StoredObject {
                try await below.get(key)
            }

            /// The ranged and streamed read (PlugboardAPI 1.2): what the server calls for every GET.
            public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
                try await below.get(key, range: range)
            }

            /// The read answered at once (PlugboardAPI 1.4), on the server's event loop: never
            /// wait here (no lock held across I/O, no network); nil means "call get".
            public func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
                try below.getWithoutWaiting(key, range: range)
            }

            public func head(_ key: String) async throws -> ObjectInfo {
                try await below.head(key)
            }

            public func delete(_ key: String) async throws {
                try await below.delete(key)
            }

            public func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
                try await below.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
            }
        }

        """#
    }

    var layerTestSource: String {
        #"""
        import PlugboardAPI
        import PlugboardTesting
        import Testing

        /// These tests load the built lib\#(name).so exactly as the `plugboard` host does
        /// (file and ELF checks, the plugin header, the toolchain stamp, dlopen, the
        /// handshake, registration), over MemoryStorage from the Plugboard checkout, as a
        /// manifest listing both with "wraps" would.
        ///
        /// MemoryStorage is a product of the checkout, not of this package: the test kit
        /// finds it in the checkout's .build. If it was not built there, the first load says
        /// so, with the command that builds it.
        @Suite struct \#(name)Tests {
            /// MemoryStorage as "Backing", the layer over it; answers the layer's loaded plugin.
            static func layered() async throws -> LoadedPlugin {
                let plugins = try await PluginUnderTest.load([
                    .init(product: "MemoryStorage", name: "Backing"),
                    .init(product: "\#(name)", wraps: "Backing"),
                ])
                return plugins[1]
            }

            /// What `plugboard inspect` and `plugboard services` will show.
            @Test func plugin_loadsOverABacking_andDeclaresItsService() async throws {
                let plugin = try await Self.layered()
                #expect(plugin.version == "0.1.0")
                // Contains, not equals: registrar.mapErrors adds a service of its own.
                #expect(plugin.services.contains("PlugboardAPI.ObjectStorage"))
                #expect(plugin.container.registrations().first { $0.owner == "\#(name)" }?.wraps == "Backing")
                \#(ScaffoldText.headerCheck(name))
                await plugin.shutdown()
            }

            /// The whole ObjectStorage conformance suite through the layer (the storage the
            /// container resolves is the layer, above the backing), with the rule that a
            /// layer keeps ranged and at-once reads as they are below.
            @Test func layer_passesTheConformanceSuite() async throws {
                let plugin = try await Self.layered()
                let report = await plugin.objectStorageConformance().run()
                \#(ScaffoldText.reportCheck)
                #expect(report.result(named: "layer_keeps_reads_streamed")?.outcome == .passed, "\(report)")
                await plugin.shutdown()
            }
        }

        """#
    }
}
