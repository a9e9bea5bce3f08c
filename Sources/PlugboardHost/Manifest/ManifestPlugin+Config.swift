import PlugboardAPI
import PlugboardJSON

extension ManifestPlugin {
    /// The configuration as written, with every secret replaced by `<redacted>`: what
    /// output, logs and the HTTP API show. `${VAR}`s are not expanded. See
    /// ``ConfigSecrets`` for what counts as a secret.
    public var redactedConfig: ConfigValue { ConfigSecrets.redacted(rawConfig) }

    /// The configuration the plugin receives: `${VAR}` and `${VAR:-default}` expanded from
    /// `variables` in every string (nested ones too, keys excepted), `$${` turned into
    /// `${`, and each secret wrapper `{"secret": "..."}` replaced by its plain string.
    ///
    /// Call it only for plugins selected for the current environment: a variable missing
    /// for a plugin that is not loaded is no error.
    ///
    /// - Parameter variables: the process environment, captured once by the CLI.
    /// - Throws: `manifest.missing_variable`, naming the variable, the plugin and the
    ///   JSON path, when a `${VAR}` without default names a variable that is not set;
    ///   `manifest.expansion_too_large` when the expanded strings pass 16 MiB.
    /// - Important: the result holds secrets in clear. Never print, log or return it
    ///   (`PluginConfig`'s default description shows every value); print
    ///   ``redactedConfig`` instead.
    public func resolvedConfig(environment variables: [String: String]) throws(PlugboardError) -> PluginConfig {
        var budget = VariableExpander.Budget()
        return try resolvedConfig(environment: variables, budget: &budget)
    }

    /// The same, drawing on a budget shared by every plugin of the manifest, so that
    /// the bound holds for the whole manifest and not for each plugin.
    func resolvedConfig(environment variables: [String: String],
                        budget: inout VariableExpander.Budget) throws(PlugboardError) -> PluginConfig {
        guard case .object(let values) = try resolve(rawConfig, variables: variables, budget: &budget) else {
            return PluginConfig([:], plugin: name, baseDirectory: manifestDirectory, manifest: manifestPath)
        }
        return PluginConfig(values, plugin: name, baseDirectory: manifestDirectory, manifest: manifestPath)
    }

    private func resolve(_ value: JSONValue, variables: [String: String],
                         budget: inout VariableExpander.Budget) throws(PlugboardError) -> ConfigValue {
        if ConfigSecrets.isWrapper(value), case .object(let members) = value.kind {
            return try resolve(members[0].value, variables: variables, budget: &budget)
        }
        switch value.kind {
        case .string(let text):
            return .string(try expand(text, at: value, variables: variables, budget: &budget))
        case .array(let elements):
            var out: [ConfigValue] = []
            out.reserveCapacity(elements.count)
            for e in elements { out.append(try resolve(e, variables: variables, budget: &budget)) }
            return .array(out)
        case .object(let members):
            var out: [String: ConfigValue] = [:]
            for m in members { out[m.key] = try resolve(m.value, variables: variables, budget: &budget) }
            return .object(out)
        default:
            return value.configValue
        }
    }

    private func expand(_ text: String, at value: JSONValue, variables: [String: String],
                        budget: inout VariableExpander.Budget) throws(PlugboardError) -> String {
        let result: Result<String, VariableExpander.Refusal>
        do {
            result = try VariableExpander.expand(text, variables: variables, budget: &budget)
        } catch {
            // Checked when the manifest was read; kept as an error rather than a trap.
            throw PlugboardError(.manifestInvalidValue,
                "\(manifestPath):\(value.location): \(value.path.spoken): malformed variable reference",
                detail: error.reason, hint: "Write ${NAME} or ${NAME:-default}; write $${ for a literal \"${\".")
        }
        switch result {
        case .success(let expanded):
            return expanded
        case .failure(.missing(let missing)):
            throw PlugboardError(.manifestMissingVariable,
                "\(manifestPath):\(value.location): environment variable \"\(missing)\" is not set, needed by plugin \(ManifestReader.quoted(name))",
                detail: "Plugin \(ManifestReader.quoted(name)) uses ${\(missing)} in \(value.path.spoken), with no default.",
                hint: "Set \(missing) in the environment, or write ${\(missing):-default} to give a default.")
        case .failure(.tooLarge(let needed, let available)):
            // Sizes only: the variables' values may be secrets.
            let limit = budget.limit
            throw PlugboardError(.manifestExpansionTooLarge,
                "\(manifestPath):\(value.location): expanding variables in plugin \(ManifestReader.quoted(name))'s config goes beyond the limit of \(limit >> 20) MiB",
                detail: "Expected at most \(limit) bytes of configuration text in the whole manifest once ${...} references are expanded; found \(value.path.spoken) alone expanding to \(needed) bytes, with \(available) bytes left.",
                hint: "Look for a ${VAR} repeated many times or naming a very large variable; pass large data as a file (a path in the config) rather than through the environment.")
        }
    }
}
