import PlugboardAPI

extension ManifestDecoder {
    /// Refuses requirements on plugins that are not in the manifest, then cycles.
    func checkRequirements(_ plugins: [ManifestPlugin]) throws(PlugboardError) {
        let names = plugins.map(\.name)
        let known = Set(names)
        for plugin in plugins {
            for (name, location) in zip(plugin.requires, plugin.requirementLocations) where !known.contains(name) {
                let listed = names.prefix(20).map(ManifestReader.quoted).joined(separator: ", ")
                    + (names.count > 20 ? ", ..." : "")
                let suggestion = Spelling.closest(to: name, among: names)
                throw PlugboardError(.manifestUnknownRequirement,
                    "\(reader.at(location)): plugin \(ManifestReader.quoted(plugin.name)) requires \(ManifestReader.quoted(name)), which is not in the manifest",
                    detail: names.isEmpty ? "The manifest has no plugins." : "The manifest's plugins are \(listed).",
                    hint: suggestion.map { "Did you mean \(ManifestReader.quoted($0))?" }
                        ?? "Add a plugin named \(ManifestReader.quoted(name)), or remove it from \"requires\".")
            }
        }
        guard let cycle = RequirementGraph(plugins: plugins).firstCycle(), let first = cycle.first else { return }
        let path = (cycle + [first]).map { plugins[$0].name }.joined(separator: " -> ")
        let next = plugins[cycle.count > 1 ? cycle[1] : first].name
        let start = plugins[first]
        let location = start.requires.firstIndex(of: next).map { start.requirementLocations[$0] } ?? start.location
        throw PlugboardError(.manifestRequirementCycle, "\(reader.at(location)): requirement cycle: \(path)",
            detail: "Each plugin is loaded after the plugins it requires, so plugins that require each other in a cycle can never be loaded.",
            hint: "Remove one of the requirements in the cycle.")
    }
}
