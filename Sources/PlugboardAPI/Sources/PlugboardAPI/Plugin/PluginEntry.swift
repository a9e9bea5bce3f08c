/// The C entry point's protocol, and the helper a plugin's entry point calls.
///
/// The host calls the plugin's one exported symbol, `plugboard_plugin_entry`, as
/// `int32_t plugboard_plugin_entry(int32_t op, void *arg)`:
///
/// 1. ``Op/handshake``: `arg` is a zeroed buffer of ``PluginHandshake/wordCount`` 64-bit
///    words; the plugin writes the versions it was compiled against and the
///    `ObjectIdentifier`s of PlugboardAPI types as it sees them. Only plain integers
///    cross, so this is safe even when the plugin carries its own copy of PlugboardAPI,
///    which is exactly what it detects.
/// 2. ``Op/describe``: `arg` is an unretained ``PluginCall``; the plugin fills in its name,
///    version and declared services.
/// 3. ``Op/register``: `arg` is an unretained ``PluginCall`` carrying the registrar; the
///    plugin registers its services. A thrown error comes back in the call object as a
///    value; no Swift error and no trap crosses the C boundary.
///
/// The host only sends `describe` and `register` after the handshake has shown that the
/// plugin and the host share one PlugboardAPI.
public enum PluginEntry {
    /// The exported symbol's name.
    public static let symbolName = "plugboard_plugin_entry"

    /// The operations of the entry point.
    public enum Op {
        public static let handshake: Int32 = 1
        public static let describe: Int32 = 2
        public static let register: Int32 = 3
    }

    /// What the entry point returns.
    public enum Status {
        public static let ok: Int32 = 0
        /// `register` failed; the reason is in ``PluginCall/failure``.
        public static let failed: Int32 = 1
        public static let unknownOperation: Int32 = 2
        public static let missingArgument: Int32 = 3
    }

    /// Answers one call of the entry point for plugin `P`. A plugin's entry point is this
    /// one line.
    ///
    /// Emitted into the plugin, so the versions and type identities it reports are the
    /// plugin's own (docs/ARCHITECTURE.md, fact 5).
    @_alwaysEmitIntoClient
    public static func run<P: Plugin>(_ op: Int32, _ arg: UnsafeMutableRawPointer?, _ plugin: P.Type) -> Int32 {
        guard let arg else { return Status.missingArgument }
        switch op {
        case Op.handshake:
            let words = arg.assumingMemoryBound(to: UInt64.self)
            let api = APIVersion.stamp
            words[0] = PluginHandshake.magic
            words[1] = UInt64(PluginABI.stamp)
            words[2] = UInt64(api.major)
            words[3] = UInt64(api.minor)
            words[4] = UInt64(api.patch)
            words[5] = UInt64(UInt(bitPattern: ObjectIdentifier(PluginCall.self)))
            words[6] = UInt64(UInt(bitPattern: ObjectIdentifier(Container.self)))
            words[7] = UInt64(UInt(bitPattern: ObjectIdentifier((any ManagedService).self)))
            return Status.ok
        case Op.describe:
            Unmanaged<PluginCall>.fromOpaque(arg).takeUnretainedValue().describe(P.self)
            return Status.ok
        case Op.register:
            return Unmanaged<PluginCall>.fromOpaque(arg).takeUnretainedValue().register(P.self)
        default:
            return Status.unknownOperation
        }
    }
}

/// The words a plugin writes in the handshake, and the host's comparison of them.
public struct PluginHandshake: Hashable, Sendable {
    /// `PBRDHAND` in ASCII, so a buffer that was never written is recognised.
    public static let magic: UInt64 = 0x5042_5244_4841_4E44
    /// The number of 64-bit words in the handshake buffer.
    public static let wordCount = 8

    public var abi: UInt32
    public var api: APIVersion
    /// `ObjectIdentifier` bits of `PluginCall`, `Container` and `any ManagedService`.
    public var typeIdentities: [UInt64]

    /// The host's own values, to compare with.
    public static var host: PluginHandshake {
        PluginHandshake(abi: PluginABI.current, api: APIVersion.current, typeIdentities: hostTypeIdentities)
    }

    static var hostTypeIdentities: [UInt64] {
        [ObjectIdentifier(PluginCall.self), ObjectIdentifier(Container.self),
         ObjectIdentifier((any ManagedService).self)].map { UInt64(UInt(bitPattern: $0)) }
    }

    public init(abi: UInt32, api: APIVersion, typeIdentities: [UInt64]) {
        self.abi = abi
        self.api = api
        self.typeIdentities = typeIdentities
    }

    /// Reads the words a plugin wrote.
    ///
    /// - Throws: `plugin.protocol_violation` when the buffer does not hold a handshake.
    public init(words: [UInt64], plugin: String) throws(PlugboardError) {
        guard words.count == Self.wordCount, words[0] == Self.magic else {
            throw PlugboardError(.protocolViolation, "plugin \"\(plugin)\" did not answer the handshake",
                detail: "Its entry point returned without writing the handshake words.",
                hint: "The entry point must call PluginEntry.run(op, arg, YourPlugin.self); rebuild it from a scaffold.")
        }
        func u32(_ w: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: w) }
        self.init(abi: u32(words[1]), api: APIVersion(major: u32(words[2]), minor: u32(words[3]), patch: u32(words[4])),
                  typeIdentities: Array(words[5...]))
    }

    /// Refuses a plugin built for another ABI or API version, or one that links its own
    /// copy of PlugboardAPI.
    public func check(plugin: String) throws(PlugboardError) {
        try PluginCompatibility.check(plugin: plugin, abi: abi, api: api)
        guard typeIdentities == Self.hostTypeIdentities else {
            throw PlugboardError(.duplicateAPIModule, "plugin \"\(plugin)\" carries its own copy of PlugboardAPI",
                detail: "The PlugboardAPI types it sees are not the host's: it linked the API statically instead of using the shared libPlugboardAPI.so, so nothing it registers could be resolved.",
                hint: "Depend on PlugboardAPI through its dynamic product, .product(name: \"PlugboardAPI\", package: \"PlugboardAPI\"), in a package of its own (not a target of the plugin's package), and rebuild.")
        }
    }
}
