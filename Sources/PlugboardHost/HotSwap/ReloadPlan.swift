import PlugboardAPI

/// What a reload changes, worked out from the running plugins and the new manifest.
struct ReloadPlan {
    /// Selected now, not before.
    var added: [String] = []
    /// Selected before and now, loaded from another file, bytes, config, rank or
    /// requirements, or requiring (transitively) a plugin that is.
    var changed: [String] = []
    /// Selected before, not now.
    var removed: [String] = []
    /// The plugins to load: added and changed, in load order.
    var toLoad: Set<String> = []
    /// Unchanged active plugins that a plugin to load requires: loaded beside it in the
    /// preflight child.
    var providers: Set<String> = []
    /// Active plugins whose registrations the commit removes.
    var retiring: [String] = []
    /// Plugins unchanged since they failed or were rejected: tried again on every reload
    /// (what they need may have come back), and allowed to fail again.
    var retry: Set<String> = []

    init(selected: [ManifestPlugin], next: [String: PluginFingerprint], current: PluginHost.State) {
        let before = current.fingerprints
        let active = Set(current.records.filter { $0.state == .active }.map(\.name))
        removed = current.records.map(\.name).filter { before[$0] != nil && next[$0] == nil }
        var dirty = Set(removed)
        for plugin in selected {
            if before[plugin.name] == nil {
                added.append(plugin.name)
            } else if before[plugin.name] != next[plugin.name] {
                dirty.insert(plugin.name)
            }
        }
        // A plugin requiring a changed or removed one was built from it: reload it too.
        var grew = true
        while grew {
            grew = false
            for plugin in selected where !dirty.contains(plugin.name) && plugin.dependencies.contains(where: dirty.contains) {
                dirty.insert(plugin.name)
                grew = true
            }
        }
        for plugin in selected where dirty.contains(plugin.name) && before[plugin.name] != nil { changed.append(plugin.name) }
        toLoad = Set(added + changed)
        let failed = Set(current.records.filter { $0.state == .failed || $0.state == .rejected }.map(\.name))
        retry = Set(selected.map(\.name).filter { failed.contains($0) && !toLoad.contains($0) && next[$0]?.path != nil })
        retiring = current.records.map(\.name).filter { active.contains($0) && (dirty.contains($0) || removed.contains($0)) }
        let byName = Dictionary(selected.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var stack = selected.filter { toLoad.contains($0.name) }.flatMap(\.dependencies)
        while let name = stack.popLast() {
            guard !toLoad.contains(name), !providers.contains(name), active.contains(name), let p = byName[name] else { continue }
            providers.insert(name)
            stack += p.dependencies
        }
    }

    /// For a plugin the reload has no staging of (every selected plugin is staged first,
    /// so only a driver's bug gets here).
    func locateError(_ plugin: ManifestPlugin) -> PlugboardError {
        PlugboardError(.loadFailed, "could not locate the file of plugin \"\(plugin.name)\"")
    }
}
