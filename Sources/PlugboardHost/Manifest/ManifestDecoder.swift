import PlugboardAPI
import PlugboardJSON

/// Turns a manifest's JSON tree into a ``Manifest``, stopping at the first error (see
/// ``ManifestLoader`` for the order).
struct ManifestDecoder {
    let reader: ManifestReader
    /// The manifest's folder, absolute.
    let directory: String

    func decode(_ root: JSONValue) throws(PlugboardError) -> Manifest {
        let members = try reader.object(root, hint: "A manifest is a JSON object such as {\"schemaVersion\": 1, \"plugins\": []}.")
        let schemaVersion = try decodeSchemaVersion(root)

        var environment: Environment?
        var plugins: [ManifestPlugin]?
        var hotSwap = HotSwapSettings()
        var s3: S3Settings?
        var trust = ManifestTrust.none
        for member in members {
            switch member.key {
            case "$schema":
                _ = try reader.string(member.value, hint: "Write the URL or path of the JSON Schema, or remove \"$schema\".")
            case "schemaVersion":
                break
            case "environment":
                environment = try reader.environment(member.value)
            case "plugins":
                plugins = try decodePlugins(member.value)
            case "hotSwap":
                hotSwap = try decodeHotSwap(member.value)
            case "s3":
                s3 = try decodeS3(member.value)
            case "trust":
                trust = try decodeTrust(member.value)
            default:
                try reader.checkKeys([member], known: ManifestLoader.topLevelKeys, in: root)
            }
        }
        guard let plugins else {
            throw reader.missingKey("plugins", in: root, detail: "Every manifest lists its plugins, even when there are none.",
                                    hint: "Add \"plugins\": [] to the top-level object.")
        }
        try checkRequirements(plugins)
        return Manifest(path: reader.source, directory: directory, schemaVersion: schemaVersion,
                        defaultEnvironment: environment, plugins: plugins, hotSwap: hotSwap, s3: s3,
                        trust: trust)
    }

    private func decodeSchemaVersion(_ root: JSONValue) throws(PlugboardError) -> Int {
        let supported = Manifest.supportedSchemaVersions.map(String.init).joined(separator: ", ")
        guard let value = root["schemaVersion"] else {
            throw reader.missingKey("schemaVersion", in: root,
                detail: "Every manifest says which version of the format it is written in; this host reads version \(supported).",
                hint: "Add \"schemaVersion\": 1 to the top-level object.")
        }
        let version: Int
        do {
            version = try reader.integer(value)
        } catch {
            throw PlugboardError(.manifestWrongType,
                "\(reader.at(value.location)): schemaVersion: expected an integer, found \(value.kindDescription)",
                detail: "This host reads schemaVersion \(supported).", hint: "Write \"schemaVersion\": 1.")
        }
        guard Manifest.supportedSchemaVersions.contains(version) else {
            let newer = version > (Manifest.supportedSchemaVersions.max() ?? 0)
            throw PlugboardError(.manifestUnsupportedVersion, "\(reader.at(value.location)): unsupported schemaVersion \(version)",
                detail: "This host reads schemaVersion \(supported); the manifest declares \(version).",
                hint: newer ? "Use a host that reads schemaVersion \(version), or write the manifest for version 1 (docs/MANIFEST.md)."
                            : "Write \"schemaVersion\": 1.")
        }
        return version
    }

    private func decodePlugins(_ value: JSONValue) throws(PlugboardError) -> [ManifestPlugin] {
        let elements = try reader.array(value, hint: "Write \"plugins\" as an array of plugin objects.")
        var plugins: [ManifestPlugin] = []
        var named: [String: ManifestPlugin] = [:]
        for (index, element) in elements.enumerated() {
            let plugin = try decodePlugin(element, index: index)
            if let first = named[plugin.name] {
                let name = ManifestReader.quoted(plugin.name)
                throw PlugboardError(.manifestDuplicatePlugin, "\(reader.at(plugin.nameLocation)): duplicate plugin name \(name)",
                    detail: "plugins[\(first.index)] (at \(first.nameLocation)) and plugins[\(index)] (at \(plugin.nameLocation)) are both named \(name).",
                    hint: "Give each plugin a unique name.")
            }
            named[plugin.name] = plugin
            plugins.append(plugin)
        }
        return plugins
    }

    private func decodeHotSwap(_ value: JSONValue) throws(PlugboardError) -> HotSwapSettings {
        let members = try reader.object(value, hint: "Write \"hotSwap\" as an object such as {\"enabled\": true}.")
        var settings = HotSwapSettings()
        for member in members {
            let v = member.value
            switch member.key {
            case "enabled":
                settings.enabled = try reader.bool(v)
            case "allowInProduction":
                settings.allowInProduction = try reader.bool(v)
            case "debounceMilliseconds":
                settings.debounceMilliseconds = try integer(v, in: 0...3_600_000, unit: "milliseconds")
            case "preflightTimeoutSeconds":
                let seconds = try number(v, in: 0...86_400, unit: "seconds")
                guard seconds > 0 else {
                    throw reader.invalidValue(v, "expected more than 0 seconds, found 0",
                        detail: "A preflight probe with no time to run would fail every hot swap.",
                        hint: "Give the probe time to run, such as 10 seconds.")
                }
                settings.preflightTimeoutSeconds = seconds
            case "drainTimeoutSeconds":
                settings.drainTimeoutSeconds = try number(v, in: 0...86_400, unit: "seconds")
            case "maxRetainedImages":
                settings.maxRetainedImages = try integer(v, in: 0...1024, unit: "images")
            default:
                try reader.checkKeys([member], known: HotSwapSettings.keys, in: value)
            }
        }
        return settings
    }

    private func integer(_ value: JSONValue, in range: ClosedRange<Int>, unit: String) throws(PlugboardError) -> Int {
        let i = try reader.integer(value)
        guard range.contains(i) else { throw outOfRange(value, found: String(i), range: range, unit: unit) }
        return i
    }

    private func number(_ value: JSONValue, in range: ClosedRange<Double>, unit: String) throws(PlugboardError) -> Double {
        let d = try reader.number(value)
        guard range.contains(d) else {
            let found = d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
            throw outOfRange(value, found: found, range: Int(range.lowerBound)...Int(range.upperBound), unit: unit)
        }
        return d
    }

    private func outOfRange(_ value: JSONValue, found: String, range: ClosedRange<Int>, unit: String) -> PlugboardError {
        let negative = found.hasPrefix("-")
        return reader.invalidValue(value,
            negative ? "expected a non-negative number, found \(found)"
                     : "expected at most \(range.upperBound) \(unit), found \(found)",
            detail: "The value must be from \(range.lowerBound) to \(range.upperBound) \(unit).",
            hint: negative ? "Write 0 or more." : "Write a smaller value.")
    }
}
