import PlugboardAPI

extension ManifestPlugin: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The plugin with its configuration redacted:
    /// `plugin "Files" (product "FileStorage", rank 0, environments testing, development, config {"root":"data"})`.
    public var description: String {
        var parts = [source.description]
        if let sha256 { parts.append("sha256 \(sha256)") }
        if let signature { parts.append("signed by key \(signature.keyID)") }
        if !enabled { parts.append("disabled") }
        if required { parts.append("required") }
        parts.append("rank \(rank)")
        parts.append("environments \(environments.map(\.name).joined(separator: ", "))")
        if !requires.isEmpty { parts.append("requires \(requires.joined(separator: ", "))") }
        parts.append("config \(redactedConfig)")
        return "plugin \(ManifestReader.quoted(name)) (\(parts.joined(separator: ", ")))"
    }

    /// The same as ``description``, with the plugin's place in the manifest.
    public var debugDescription: String { "\(origin): \(description)" }

    /// What `dump` and debuggers show: the fields, with the configuration redacted.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "name": name, "source": source, "sha256": sha256 as Any, "signature": signature.map { "\($0)" } as Any,
            "enabled": enabled, "required": required,
            "environments": environments.map(\.name), "rank": rank, "requires": requires,
            "location": "\(origin)", "config": redactedConfig,
        ], displayStyle: .struct)
    }
}
