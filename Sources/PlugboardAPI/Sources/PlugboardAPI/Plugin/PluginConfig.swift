/// A plugin's configuration object, with typed accessors whose errors say where and
/// what: `config.timeoutSeconds: expected an integer, found a string`.
///
/// ```swift
/// let bucket = try registrar.config.string("bucket")
/// let retries = try registrar.config.int("maxRetries", default: 3)
/// ```
public struct PluginConfig: Hashable, Sendable {
    /// The object's members.
    public let values: [String: ConfigValue]
    /// The plugin this belongs to, for messages.
    public let plugin: String
    /// Where this object is: `config`, or `config.tls` for a nested one.
    public let path: String
    /// The folder relative paths in the config are relative to: the manifest's folder.
    public let baseDirectory: String?
    /// The manifest the config was written in, as the host was given it (`plugins.json`,
    /// `--manifest other.json`): what the errors' hints name. Nil where there is none, such
    /// as a test's own config (PlugboardAPI 1.6).
    public let manifest: String?

    public init(_ values: [String: ConfigValue] = [:], plugin: String, path: String = "config",
                baseDirectory: String? = nil, manifest: String?) {
        self.values = values
        self.plugin = plugin
        self.path = path
        self.baseDirectory = baseDirectory
        self.manifest = manifest
    }

    /// The 1.0 initializer, kept as it was (a defaulted parameter would change its
    /// symbol): no manifest named.
    public init(_ values: [String: ConfigValue] = [:], plugin: String, path: String = "config",
                baseDirectory: String? = nil) {
        self.init(values, plugin: plugin, path: path, baseDirectory: baseDirectory, manifest: nil)
    }

    /// Where the config is written, for hints: `the plugin's config in other.json`.
    var written: String {
        "the plugin's config in \(manifest ?? "the manifest")"
    }

    /// A required path: a string, made absolute against ``baseDirectory`` (the manifest's
    /// folder) when it is relative.
    public func filePath(_ key: String) throws(PlugboardError) -> String {
        let raw = try string(key)
        guard !raw.isEmpty else {
            throw PlugboardError(.configInvalid, "plugin \"\(plugin)\": empty path in configuration key \"\(path).\(key)\"",
                                 detail: "Expected a file system path, found an empty string.",
                                 hint: "Set \"\(key)\" to a folder; relative paths are relative to the manifest's folder.")
        }
        guard !raw.hasPrefix("/"), let base = baseDirectory else { return raw }
        return base.hasSuffix("/") ? base + raw : base + "/" + raw
    }

    /// The raw value of `key`, or nil.
    public subscript(key: String) -> ConfigValue? { values[key] }

    /// A required string.
    public func string(_ key: String) throws(PlugboardError) -> String {
        guard let v = values[key] else { throw missing(key, "a string") }
        guard case .string(let s) = v else { throw wrongType(key, "a string", v) }
        return s
    }

    /// An optional string; `null` counts as absent.
    public func string(_ key: String, default value: String?) throws(PlugboardError) -> String? {
        switch values[key] {
        case nil, .null?: return value
        case .string(let s)?: return s
        case let other?: throw wrongType(key, "a string", other)
        }
    }

    /// A required integer.
    public func int(_ key: String) throws(PlugboardError) -> Int {
        guard let v = values[key] else { throw missing(key, "an integer") }
        return try integer(key, v)
    }

    /// An optional integer.
    public func int(_ key: String, default value: Int) throws(PlugboardError) -> Int {
        switch values[key] {
        case nil, .null?: return value
        case let v?: return try integer(key, v)
        }
    }

    /// An optional number (integers convert).
    public func double(_ key: String, default value: Double) throws(PlugboardError) -> Double {
        switch values[key] {
        case nil, .null?: return value
        case .number(let d)?: return d
        case .integer(let i)?: return Double(i)
        case let other?: throw wrongType(key, "a number", other)
        }
    }

    /// An optional boolean.
    public func bool(_ key: String, default value: Bool) throws(PlugboardError) -> Bool {
        switch values[key] {
        case nil, .null?: return value
        case .bool(let b)?: return b
        case let other?: throw wrongType(key, "true or false", other)
        }
    }

    /// A nested object; an absent key gives an empty one.
    public func object(_ key: String) throws(PlugboardError) -> PluginConfig {
        switch values[key] {
        case nil, .null?: return PluginConfig([:], plugin: plugin, path: "\(path).\(key)", baseDirectory: baseDirectory, manifest: manifest)
        case .object(let o)?: return PluginConfig(o, plugin: plugin, path: "\(path).\(key)", baseDirectory: baseDirectory, manifest: manifest)
        case let other?: throw wrongType(key, "an object", other)
        }
    }

    /// Refuses keys this plugin does not know, naming the closest known one.
    public func requireOnly(_ known: Set<String>) throws(PlugboardError) {
        for key in values.keys.sorted() where !known.contains(key) {
            // Only a close key is suggested (the host's rule: at most a third of the longer
            // word wrong, at least 2), the first in sorted order among equally close ones.
            let ranked = known.sorted().map { (key: $0, distance: Container.editDistance(key, $0)) }
            let close = ranked.filter { $0.distance <= max(2, max(key.count, $0.key.count) / 3) }
                .min { $0.distance < $1.distance }?.key
            let suggestion = close.map { " Did you mean \"\($0)\"?" } ?? ""
            throw PlugboardError(.configInvalid, "plugin \"\(plugin)\": unknown configuration key \"\(path).\(key)\"",
                detail: "Known keys: \(known.sorted().joined(separator: ", ")).\(suggestion)",
                hint: "Remove or correct the key in \(written).")
        }
    }

    private func integer(_ key: String, _ v: ConfigValue) throws(PlugboardError) -> Int {
        switch v {
        case .integer(let i) where i >= Int64(Int.min) && i <= Int64(Int.max): return Int(i)
        case .number(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int(d)
        default: throw wrongType(key, "an integer", v)
        }
    }

    private func missing(_ key: String, _ expected: String) -> PlugboardError {
        PlugboardError(.configInvalid, "plugin \"\(plugin)\": missing configuration key \"\(path).\(key)\"",
                       detail: "Expected \(expected) at \(path).\(key), found nothing.",
                       hint: "Add \"\(key)\" to \(written).")
    }

    private func wrongType(_ key: String, _ expected: String, _ found: ConfigValue) -> PlugboardError {
        PlugboardError(.configInvalid, "plugin \"\(plugin)\": wrong type for configuration key \"\(path).\(key)\"",
                       detail: "Expected \(expected) at \(path).\(key), found a value of type \(found.kindName).",
                       hint: "Correct \"\(key)\" in \(written).")
    }
}
