/// The plugin header: five little-endian `UInt32`s in an ELF section named
/// `plugboard_header`, readable from the file without running any plugin code.
///
/// | word | value |
/// |------|-------|
/// | 0 | magic `0x44524250` (the bytes `PBRD`) |
/// | 1 | header layout version, 1 |
/// | 2 | ``PluginABI`` version |
/// | 3 | PlugboardAPI major version |
/// | 4 | PlugboardAPI minor version |
///
/// A plugin declares it with a literal (a constant from another module is not allowed
/// in a constant expression, docs/ARCHITECTURE.md, fact 4):
///
/// ```swift
/// @section("plugboard_header") @used
/// let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)
/// ```
/// The format is documented in `docs/PLUGIN_HEADER.md`; tools may rely on it.
public struct PluginHeader: Hashable, Sendable, Codable {
    /// The ELF section's name.
    public static let sectionName = "plugboard_header"
    /// `PBRD` read as a little-endian `UInt32`.
    public static let magic: UInt32 = 0x4452_4250
    /// The layout this host reads.
    public static let layoutVersion: UInt32 = 1
    /// The section's size in bytes.
    public static let size = 20

    public var layoutVersion: UInt32
    public var abiVersion: UInt32
    public var apiMajor: UInt32
    public var apiMinor: UInt32

    public init(layoutVersion: UInt32 = PluginHeader.layoutVersion, abiVersion: UInt32,
                apiMajor: UInt32, apiMinor: UInt32) {
        self.layoutVersion = layoutVersion
        self.abiVersion = abiVersion
        self.apiMajor = apiMajor
        self.apiMinor = apiMinor
    }

    /// The header a plugin built against this library would carry.
    public static var expected: PluginHeader {
        PluginHeader(abiVersion: PluginABI.current, apiMajor: APIVersion.current.major,
                     apiMinor: APIVersion.current.minor)
    }

    /// Parses the section's bytes.
    ///
    /// - Throws: `plugin.abi_mismatch` when the bytes are not a header this host can read
    ///   (wrong size, magic or layout version).
    public init(bytes: some Collection<UInt8>, plugin: String) throws(PlugboardError) {
        let b = Array(bytes)
        func word(_ i: Int) -> UInt32 {
            UInt32(b[i * 4]) | UInt32(b[i * 4 + 1]) << 8 | UInt32(b[i * 4 + 2]) << 16 | UInt32(b[i * 4 + 3]) << 24
        }
        guard b.count == Self.size else {
            throw PlugboardError(.abiMismatch, "incompatible plugin \"\(plugin)\": malformed plugin header",
                detail: "The \(Self.sectionName) section is \(b.count) bytes long; a header is \(Self.size) bytes.",
                hint: "Rebuild the plugin from a scaffold of this host (plugboard new-plugin).")
        }
        guard word(0) == Self.magic else {
            let found = String(word(0), radix: 16)
            throw PlugboardError(.abiMismatch, "incompatible plugin \"\(plugin)\": bad magic in plugin header",
                detail: "Expected magic 0x\(String(Self.magic, radix: 16)) (PBRD), found 0x\(found).",
                hint: "Rebuild the plugin from a scaffold of this host (plugboard new-plugin).")
        }
        guard word(1) == Self.layoutVersion else {
            throw PlugboardError(.abiMismatch, "incompatible plugin \"\(plugin)\": plugin header layout mismatch",
                detail: "Host reads header layout \(Self.layoutVersion), the plugin has layout \(word(1)).",
                hint: "Rebuild the plugin against this host's PlugboardAPI.")
        }
        self.init(layoutVersion: word(1), abiVersion: word(2), apiMajor: word(3), apiMinor: word(4))
    }

    /// The header's twenty bytes.
    public var bytes: [UInt8] {
        [Self.magic, layoutVersion, abiVersion, apiMajor, apiMinor].flatMap { w in
            (0..<4).map { UInt8(truncatingIfNeeded: w >> (8 * $0)) }
        }
    }

    /// Refuses a header this host cannot load: another ABI, another API major version, or
    /// a newer API minor version than the host's.
    public func checkCompatible(plugin: String) throws(PlugboardError) {
        do throws(PlugboardError) {
            try PluginCompatibility.check(plugin: plugin, abi: abiVersion,
                                          api: APIVersion(major: apiMajor, minor: apiMinor, patch: 0),
                                          comparePatch: false)
        } catch {
            // The header is a literal in the plugin's source: one edited by hand stays wrong
            // however often the plugin is rebuilt, so the hint names the literal too.
            throw PlugboardError(error.code, error.message, detail: error.detail,
                hint: (error.hint ?? "") + " If the plugin's header literal was written or edited by hand, give it plugin ABI \(PluginABI.current) and API \(APIVersion.current.major).N with N the minor version the plugin is written for, at most \(APIVersion.current.minor) for this host (plugboard new-plugin writes \(APIVersion.current.major).\(APIVersion.current.minor)); a scaffolded package's swift test makes this same check.",
                underlying: error.underlying)
        }
    }
}

/// The one rule for whether a plugin built against some ABI and API version may load.
public enum PluginCompatibility {
    /// - Throws: `plugin.abi_mismatch` or `plugin.api_version_mismatch`, naming both
    ///   versions and how to rebuild.
    public static func check(plugin: String, abi: UInt32, api: APIVersion,
                             comparePatch: Bool = true) throws(PlugboardError) {
        let host = APIVersion.current
        let rebuild = "Rebuild the plugin against this host's PlugboardAPI: point its PlugboardAPI path dependency at this host's checkout, then run swift build -c release in the plugin's package."
        guard abi == PluginABI.current else {
            throw PlugboardError(.abiMismatch, "incompatible plugin \"\(plugin)\": ABI mismatch",
                detail: "Host has plugin ABI \(PluginABI.current), the plugin was built for ABI \(abi).",
                hint: rebuild)
        }
        let shown = comparePatch ? api.description : "\(api.major).\(api.minor)"
        let hostShown = comparePatch ? host.description : "\(host.major).\(host.minor)"
        guard api.major == host.major else {
            throw PlugboardError(.apiVersionMismatch, "incompatible plugin \"\(plugin)\": API version mismatch",
                detail: "Host provides PlugboardAPI \(hostShown), the plugin was built against \(shown).",
                hint: rebuild)
        }
        guard api.minor <= host.minor else {
            throw PlugboardError(.apiVersionMismatch, "incompatible plugin \"\(plugin)\": API version mismatch",
                detail: "Host provides PlugboardAPI \(hostShown), the plugin was built against the newer \(shown) and may use what this host lacks.",
                hint: "Upgrade the host, or rebuild the plugin against this host's PlugboardAPI: point its PlugboardAPI path dependency at this host's checkout, then run swift build -c release in the plugin's package.")
        }
    }
}
