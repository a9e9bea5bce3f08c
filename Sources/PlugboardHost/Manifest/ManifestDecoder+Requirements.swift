import PlugboardAPI

extension ManifestDecoder {
    /// Refuses requirements on plugins that are not in the manifest, then layers that wrap
    /// no plugin of the manifest or themselves, then cycles (through `requires` and
    /// `wraps` together).
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
        try checkLayers(plugins, names: names)
        guard let cycle = RequirementGraph(plugins: plugins).firstCycle(), let first = cycle.first else { return }
        // Whether an edge of the cycle is a `wraps` that `requires` does not also list.
        let throughWraps = cycle.indices.contains { k in
            let from = plugins[cycle[k]], to = plugins[cycle[(k + 1) % cycle.count]].name
            return from.wraps == to && !from.requires.contains(to)
        }
        let path = (cycle + [first]).map { plugins[$0].name }.joined(separator: " -> ")
        let next = plugins[cycle.count > 1 ? cycle[1] : first].name
        let start = plugins[first]
        let location = start.requires.firstIndex(of: next).map { start.requirementLocations[$0] }
            ?? (start.wraps == next ? start.wrapsLocation : nil) ?? start.location
        throw PlugboardError(.manifestRequirementCycle,
            "\(reader.at(location)): requirement cycle\(throughWraps ? " (through \"requires\" and \"wraps\")" : ""): \(path)",
            detail: "Each plugin is loaded after the plugins it requires\(throughWraps ? " and the plugin it wraps" : ""), so plugins that require each other in a cycle can never be loaded.",
            hint: throughWraps ? "Remove one of the requirements in the cycle, or wrap a plugin that does not depend on the layer."
                : "Remove one of the requirements in the cycle.")
    }

    /// A layer's `wraps` must name another plugin of the manifest.
    private func checkLayers(_ plugins: [ManifestPlugin], names: [String]) throws(PlugboardError) {
        let known = Set(names)
        for plugin in plugins {
            guard let target = plugin.wraps else { continue }
            let location = plugin.wrapsLocation ?? plugin.location
            if target == plugin.name {
                throw PlugboardError(.manifestLayerWrapsItself,
                    "\(reader.at(location)): plugin \(ManifestReader.quoted(plugin.name)) wraps itself",
                    detail: "\"wraps\" names the plugin whose provider this plugin's layer stands above; expected another plugin of the manifest, found this plugin's own name.",
                    hint: "Write the name of the plugin whose service it wraps, such as the storage plugin's, or remove \"wraps\".")
            }
            guard !known.contains(target) else { continue }
            let listed = names.prefix(20).map(ManifestReader.quoted).joined(separator: ", ") + (names.count > 20 ? ", ..." : "")
            let suggestion = Spelling.closest(to: target, among: names.filter { $0 != plugin.name })
            throw PlugboardError(.manifestUnknownLayerTarget,
                "\(reader.at(location)): plugin \(ManifestReader.quoted(plugin.name)) wraps \(ManifestReader.quoted(target)), which is not in the manifest",
                detail: "Expected the name of a plugin of the manifest; the manifest's plugins are \(listed).",
                hint: suggestion.map { "Did you mean \(ManifestReader.quoted($0))?" }
                    ?? "Add a plugin named \(ManifestReader.quoted(target)), or correct \"wraps\".")
        }
    }
}
