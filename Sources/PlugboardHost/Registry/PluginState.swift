/// Where a plugin stands, as `plugboard plugins` reports it.
public struct PluginState: Hashable, Sendable, CustomStringConvertible, Codable {
    public let description: String
    private init(_ d: String) { description = d }

    /// Loaded; its services are published.
    public static let active = PluginState("active")
    /// Loading started (the file was mapped or its code ran) and failed.
    public static let failed = PluginState("failed")
    /// Refused before `dlopen`: path, permissions, pin, ELF or plugin header, toolchain.
    public static let rejected = PluginState("rejected")
    /// `enabled: false` in the manifest.
    public static let disabled = PluginState("disabled")
    /// Replaced or removed by a hot swap: its services drain and stop; its image stays
    /// mapped (images are never unloaded).
    public static let retired = PluginState("retired")
    /// Not selected for the current environment.
    public static let skipped = PluginState("skipped")

    public init(from decoder: any Decoder) throws {
        description = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
