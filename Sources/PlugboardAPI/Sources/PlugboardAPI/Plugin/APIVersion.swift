/// A PlugboardAPI version, `major.minor.patch`.
///
/// Compatibility: a plugin built against the same major version and a minor version no
/// newer than the host's loads; a newer minor might call symbols the host's library does
/// not have, and another major version changed the contract.
public struct APIVersion: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public var major: UInt32
    public var minor: UInt32
    public var patch: UInt32

    public init(major: UInt32, minor: UInt32, patch: UInt32) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// The version the *calling* code was compiled against: the literal is emitted into
    /// the caller, so in a plugin it is the plugin's build, not the host's
    /// (docs/ARCHITECTURE.md, fact 5). Bump it together with ``PluginABI/stamp`` when needed.
    @_alwaysEmitIntoClient
    public static var stamp: APIVersion { APIVersion(major: 1, minor: 8, patch: 0) }

    /// The version of the libPlugboardAPI.so loaded in this process: the host's.
    public static var current: APIVersion { stamp }

    public var description: String { "\(major).\(minor).\(patch)" }

    public static func < (a: APIVersion, b: APIVersion) -> Bool {
        (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
    }
}

/// The binary contract between host and plugin: the plugin header's layout, the entry
/// point's protocol, and everything `@inlinable` or `@_alwaysEmitIntoClient` in
/// PlugboardAPI. Any change to those is an ABI change and bumps this number.
public enum PluginABI {
    /// The ABI the calling code was compiled against (emitted into the caller).
    @_alwaysEmitIntoClient
    public static var stamp: UInt32 { 1 }

    /// The ABI of the libPlugboardAPI.so loaded in this process.
    public static var current: UInt32 { stamp }
}
