import PlugboardAPI
import PlugboardJSON

extension ManifestDecoder {
    /// A plugin entry's `"sandbox"` object (``ManifestSandbox``); the plugin-entry decoder
    /// calls it for the key `sandbox`.
    func decodeSandbox(_ value: JSONValue) throws(PlugboardError) -> ManifestSandbox {
        let members = try reader.object(value,
            hint: "Write \"sandbox\" as an object such as {\"memoryMB\": 1024, \"openFiles\": 1024, \"readWrite\": [\"data\"], \"readOnly\": []}.")
        var sandbox = ManifestSandbox()
        for member in members {
            let v = member.value
            switch member.key {
            case "memoryMB":
                sandbox.memoryMB = try sandboxInteger(v, in: ManifestSandbox.memoryMBRange, unit: "MiB",
                    why: "The worker's Swift runtime and threads need \(ManifestSandbox.memoryMBRange.lowerBound) MiB to start.")
            case "openFiles":
                sandbox.openFiles = try sandboxInteger(v, in: ManifestSandbox.openFilesRange, unit: "descriptors",
                    why: "The worker holds a few descriptors of its own (its wire to the host, the plugin's libraries).")
            case "readWrite":
                sandbox.readWritePaths = try sandboxPaths(v, what: "read-write")
            case "readOnly":
                sandbox.readOnlyPaths = try sandboxPaths(v, what: "read-only")
            default:
                try reader.checkKeys([member], known: ManifestSandbox.keys, in: value)
            }
        }
        return sandbox
    }

    private func sandboxInteger(_ value: JSONValue, in range: ClosedRange<Int>, unit: String, why: String) throws(PlugboardError) -> Int {
        let i = try reader.integer(value)
        guard range.contains(i) else {
            throw reader.invalidValue(value, "expected \(range.lowerBound) to \(range.upperBound) \(unit), found \(i)",
                detail: why, hint: i < range.lowerBound ? "Write \(range.lowerBound) or more." : "Write \(range.upperBound) or less.")
        }
        return i
    }

    /// Absolute, against the manifest's folder (ManifestPaths, as a plugin's `path`).
    private func sandboxPaths(_ value: JSONValue, what: String) throws(PlugboardError) -> [String] {
        let elements = try reader.array(value, hint: "Write the \(what) paths as an array of strings, such as [\"data\"].")
        var paths: [String] = []
        for element in elements {
            let text = try reader.string(element, hint: "Write each \(what) path as a string, relative to the manifest's folder or absolute.")
            guard !text.isEmpty, !text.utf8.contains(0) else {
                throw reader.invalidValue(element, text.isEmpty ? "\(what) path is empty" : "\(what) path contains a NUL character",
                    detail: "Expected a folder or file path, relative to the manifest's folder or absolute.",
                    hint: "Write the path the plugin reads\(what == "read-write" ? " and writes" : ""), such as \"data\".")
            }
            paths.append(ManifestPaths.absolute(text, base: directory))
        }
        return paths
    }
}
