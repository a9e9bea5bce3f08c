import PlugboardAPI
import PlugboardJSON

extension ManifestDecoder {
    /// The keys of a plugin object.
    static let pluginKeys = ["name", "path", "product", "sha256", "source", "enabled", "required", "environments", "rank",
                             "requires", "wraps", "config", "signature", "isolation", "worker", "sandbox"]

    /// One entry of `plugins`.
    func decodePlugin(_ value: JSONValue, index: Int) throws(PlugboardError) -> ManifestPlugin {
        let members = try reader.object(value,
            hint: "Each entry of \"plugins\" is an object with a \"name\" and a \"path\" or \"product\".")
        var name: (text: String, location: SourceLocation)?
        var path: JSONValue.Member?
        var product: JSONValue.Member?
        var remote: JSONValue.Member?
        var source: PluginSource?
        var sha256: String?
        var signature: PluginSignature?
        var enabled = true
        var required = false
        var environments = Environment.all
        var rank = 0
        var requires: [String] = []
        var requirementLocations: [SourceLocation] = []
        var wraps: (name: String, location: SourceLocation)?
        var config = JSONValue(.object([]), location: value.location, path: value.path.appending(key: "config"))
        var isolation: JSONValue?
        var worker: JSONValue?
        var sandbox: JSONValue?

        for member in members {
            let v = member.value
            switch member.key {
            case "name":
                name = (try decodeName(v), v.location)
            case "path":
                let text = try reader.string(v, hint: "Write the path of the plugin's shared library as a string.")
                guard !text.isEmpty, !text.utf8.contains(0) else {
                    throw reader.invalidValue(v, text.isEmpty ? "path is empty" : "path contains a NUL character",
                        hint: "Write the path of the plugin's shared library, relative to the manifest's folder.")
                }
                path = member
                source = .path(ManifestPaths.absolute(text, base: directory))
            case "product":
                let text = try reader.string(v, hint: "Write the product's name as a string, such as \"FileStorage\" for libFileStorage.so.")
                try checkProduct(text, v)
                product = member
                source = .product(text)
            case "source":
                remote = member
                source = .remote(try decodeRemoteSource(v))
            case "sha256":
                sha256 = try decodeSHA256(v)
            case "signature":
                signature = try decodeSignature(v)
            case "enabled":
                enabled = try reader.bool(v)
            case "required":
                required = try reader.bool(v)
            case "environments":
                environments = try decodeEnvironments(v)
            case "rank":
                rank = try reader.integer(v)
            case "requires":
                (requires, requirementLocations) = try decodeRequires(v)
            case "wraps":
                let target = try reader.string(v, hint: "Write \"wraps\" as the name of the plugin whose service this one wraps, such as \"Files\".")
                guard !target.isEmpty else {
                    throw reader.invalidValue(v, "wrapped plugin name is empty",
                                              hint: "Write the name of the plugin in the manifest whose service this one wraps.")
                }
                wraps = (target, v.location)
            case "isolation":
                isolation = v
            case "worker":
                worker = v
            case "sandbox":
                sandbox = v
            case "config":
                _ = try reader.object(v, hint: "Write \"config\" as an object, such as {\"root\": \"data\"}.")
                try checkConfig(v)
                config = v
            default:
                try reader.checkKeys([member], known: Self.pluginKeys, in: value)
            }
        }

        let written = [("path", path), ("product", product), ("source", remote)].compactMap { key, member in member.map { (key, $0) } }
        if written.count > 1, let later = written.max(by: { $0.1.keyLocation < $1.1.keyLocation }),
           let first = written.first(where: { $0.0 != later.0 }) {
            throw PlugboardError(.manifestConflictingKeys,
                "\(reader.at(later.1.keyLocation)): \(value.path.spoken) has both \"\(first.0)\" and \"\(later.0)\"",
                detail: "A plugin is loaded from exactly one of a file (\"path\"), a product name (\"product\") or a store (\"source\").",
                hint: "Remove all but one of them.")
        }
        guard let name else {
            throw reader.missingKey("name", in: value, detail: "Every plugin has a name, unique in the manifest.",
                                    hint: "Add a \"name\", such as the plugin's product name.")
        }
        guard let source else {
            throw PlugboardError(.manifestMissingKey,
                "\(reader.at(value.location)): missing key \"path\" or \"product\" in \(value.path.spoken)",
                detail: "Plugin \(ManifestReader.quoted(name.text)) says neither where its file is (\"path\"), nor which product it is (\"product\"), nor which store holds it (\"source\").",
                hint: "Add \"product\": \"X\" for libX.so built with the host, \"path\" for a file, relative to the manifest's folder, or \"source\" with \"sha256\" for a file in a store.")
        }
        if sha256 == nil, case .remote(let store) = source {
            throw PlugboardError(.manifestMissingKey,
                "\(reader.at(value.location)): missing key \"sha256\" in \(value.path.spoken)",
                detail: "Plugin \(ManifestReader.quoted(name.text)) is fetched from \(ManifestReader.quoted(store.shown)); its \"sha256\" says which bytes to accept from there, so it is required.",
                hint: "Add the \"sha256\" that plugboard publish printed with the source, or run sha256sum on the plugin's file.")
        }
        var plugin = ManifestPlugin(name: name.text, source: source, sha256: sha256, signature: signature, enabled: enabled, required: required,
                                    environments: environments, rank: rank, requires: requires, index: index,
                                    location: value.location, manifestPath: reader.source, manifestDirectory: directory,
                                    rawConfig: config, requirementLocations: requirementLocations, nameLocation: name.location,
                                    wraps: wraps?.name, wrapsLocation: wraps?.location)
        plugin.isolation = try decodeIsolation(isolation, worker: worker, sandbox: sandbox)
        return plugin
    }

    private func decodeName(_ v: JSONValue) throws(PlugboardError) -> String {
        let text = try reader.string(v, hint: "Write the plugin's name as a string.")
        guard !text.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) else {
            throw reader.invalidValue(v, "plugin name is empty", hint: "Give the plugin a name, unique in the manifest.")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw reader.invalidValue(v, "plugin name contains a control character",
                hint: "Use a name of letters, digits and punctuation, such as \"S3Storage\".")
        }
        return text
    }

    private func checkProduct(_ text: String, _ v: JSONValue) throws(PlugboardError) {
        guard !text.isEmpty else {
            throw reader.invalidValue(v, "product name is empty",
                hint: "Write the product's name, such as \"FileStorage\" for libFileStorage.so.")
        }
        guard !text.contains("/"), !text.utf8.contains(0) else {
            throw reader.invalidValue(v, "product name \(ManifestReader.quoted(text)) is a path",
                detail: "A product is a name; the loader looks for lib<name>.so in the executable's folder and in PLUGBOARD_PLUGIN_PATH.",
                hint: "Write the file's location as \"path\" instead of \"product\".")
        }
        if text.hasPrefix("lib") && text.hasSuffix(".so") && text.count > 6 {
            let bare = String(text.dropFirst(3).dropLast(3))
            throw reader.invalidValue(v, "product name \(ManifestReader.quoted(text)) is a file name",
                detail: "\"product\": \"X\" stands for libX.so, so this would look for lib\(text).so.",
                hint: "Write \"product\": \(ManifestReader.quoted(bare)).")
        }
    }

    private func decodeRemoteSource(_ v: JSONValue) throws(PlugboardError) -> RemoteSource {
        let text = try reader.string(v, hint: "Write the plugin file's URL as a string, such as \"s3://bucket/plugins/X/<sha256>.so\".")
        switch RemoteSource.parse(text) {
        case .success(let source):
            return source
        case .failure(let refusal):
            throw reader.invalidValue(v, "source is not a plugin store URL",
                detail: "Expected \(RemoteSource.schemes) followed by where the file is, found \(refusal.found).",
                hint: refusal.hint)
        }
    }

    private func decodeSHA256(_ v: JSONValue) throws(PlugboardError) -> String {
        let text = try reader.string(v, hint: "Write the SHA-256 digest as 64 hex digits in a string.")
        let hex = text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) || ("A"..."F").contains($0) }
        guard text.unicodeScalars.count == 64, hex else {
            let what = hex ? "\(text.unicodeScalars.count) hex digits" : "characters that are not hex digits"
            throw reader.invalidValue(v, "sha256 is not a SHA-256 digest",
                detail: "Expected 64 hex digits, found \(what).",
                hint: "Write the output of sha256sum for the plugin's file.")
        }
        return text.lowercased()
    }

    private func decodeEnvironments(_ v: JSONValue) throws(PlugboardError) -> [Environment] {
        let elements = try reader.array(v, hint: "Write the environments as an array, such as [\"development\", \"staging\"].")
        guard !elements.isEmpty else {
            throw reader.invalidValue(v, "no environments listed",
                detail: "A plugin with no environments is never loaded.",
                hint: "List at least one environment, leave out \"environments\" for all four, or set \"enabled\": false.")
        }
        var out: [Environment] = []
        for element in elements {
            let environment = try reader.environment(element)
            guard !out.contains(environment) else {
                throw reader.invalidValue(element, "environment \"\(environment)\" is listed twice",
                                          hint: "List each environment once.")
            }
            out.append(environment)
        }
        return out
    }

    private func decodeRequires(_ v: JSONValue) throws(PlugboardError) -> ([String], [SourceLocation]) {
        let elements = try reader.array(v, hint: "Write \"requires\" as an array of plugin names, such as [\"Database\"].")
        var names: [String] = []
        var locations: [SourceLocation] = []
        for element in elements {
            let name = try reader.string(element, hint: "Write each requirement as the name of a plugin in the manifest.")
            guard !name.isEmpty else {
                throw reader.invalidValue(element, "required plugin name is empty",
                                          hint: "Write the name of a plugin in the manifest.")
            }
            guard !names.contains(name) else {
                throw reader.invalidValue(element, "plugin \(ManifestReader.quoted(name)) is required twice",
                                          hint: "List each required plugin once.")
            }
            names.append(name)
            locations.append(element.location)
        }
        return (names, locations)
    }

    /// Checks every `${...}` in the configuration's strings and the shape of every secret
    /// wrapper, for every plugin, selected or not.
    private func checkConfig(_ v: JSONValue) throws(PlugboardError) {
        switch v.kind {
        case .string(let text):
            guard text.contains("$") else { return }
            do {
                _ = try VariableExpander.parts(of: text)
            } catch {
                throw reader.invalidValue(v, "malformed variable reference", detail: error.reason,
                    hint: "Write ${NAME} or ${NAME:-default}; write $${ for a literal \"${\".")
            }
        case .object(let members):
            if ConfigSecrets.isWrapper(v), let inner = members.first?.value {
                guard case .string = inner.kind else {
                    throw reader.wrongType(inner, expected: "a string",
                        hint: "An object whose only member is \"secret\" marks a secret string: write {\"secret\": \"...\"}.")
                }
            }
            for m in members { try checkConfig(m.value) }
        case .array(let elements):
            for e in elements { try checkConfig(e) }
        default:
            break
        }
    }
}
