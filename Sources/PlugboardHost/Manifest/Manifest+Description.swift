import PlugboardAPI

extension Manifest: CustomStringConvertible, CustomReflectable {
    /// A summary with one line per plugin, configurations redacted.
    public var description: String {
        var lines = ["manifest \(ConfigValue.string(path).description) (schemaVersion \(schemaVersion)"
            + (defaultEnvironment.map { ", environment \($0)" } ?? "") + ")"]
        lines += plugins.map { "  \($0)" }
        if let s3 { lines.append("  \(s3)") }
        if trust != .none {
            lines.append("  trust: \(trust.keys.map(\.description).joined(separator: ", "))"
                + (trust.requireSignatures ? ", signatures required" : ""))
        }
        return lines.joined(separator: "\n")
    }

    /// What `dump` shows: the fields, each plugin redacted.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "path": path, "directory": directory, "schemaVersion": schemaVersion,
            "defaultEnvironment": defaultEnvironment?.name as Any, "plugins": plugins, "hotSwap": hotSwap,
            "s3": s3.map { "\($0)" } as Any, "trust": trust,
        ], displayStyle: .struct)
    }
}
