extension Resolver {
    /// Resolves the provider of `type` (under `name`) that the plugin `owner` registered,
    /// in this resolver's generation: during a hot swap's commit, the new build of
    /// `owner` when it is being rebuilt, the running one otherwise (PlugboardAPI 1.6).
    ///
    /// For a plugin that uses a second provider of a service it also wraps or provides,
    /// where the best provider would be the wrong one: `MirrorStorage` wraps the old
    /// storage and is handed the new one by its entry name. List `owner` in the manifest
    /// entry's `requires`, so that it is loaded first and a reload of it rebuilds this
    /// plugin too. A layer `owner` put over its provider is not what this answers.
    ///
    /// ```swift
    /// try registrar.registerLayer((any ObjectStorage).self) { r, below in
    ///     MirrorStorage(old: below, new: try r.resolve((any ObjectStorage).self, ownedBy: "S3"))
    /// }
    /// ```
    ///
    /// - Throws: `container.not_registered` when `owner` has no provider of the key;
    ///   `container.owner_not_required` when the factory asking belongs to a plugin whose
    ///   manifest entry does not require `owner`.
    public func resolve<T>(_ type: T.Type, name: String? = nil, ownedBy owner: String) throws(PlugboardError) -> T {
        try checkRequired(owner, for: T.self, name: name)
        if let provider = try provider(ServiceKey(T.self, name: name), ownedBy: owner, as: type) { return provider }
        let service = ServiceType.of(T.self).displayName + (name.map { " (name \"\($0)\")" } ?? "")
        throw PlugboardError(.notRegistered, "plugin \"\(owner)\" provides no \(service)",
            detail: "Expected a provider of \(service) registered by \"\(owner)\" in the generation being built, found none.",
            hint: "Load the plugin \"\(owner)\" before this one (list it in \"requires\" of this plugin's manifest entry), and check that it registers \(service).")
    }

    /// The registration of `key` by `owner` (its own, not a layer of it over itself),
    /// built if it is not yet; nil when `owner` has none.
    func provider<T>(_ key: ServiceKey, ownedBy owner: String, as type: T.Type) throws(PlugboardError) -> T? {
        let view = self.view
        let ts = ThreadState.current()
        let snap = view.snapshot(ts)
        let index = snap.index(of: key)
        guard index >= 0, let registration = snap.ranked[index].first(where: { $0.owner == owner && $0.wraps != owner }) else {
            return nil
        }
        if let p = registration.built { return builtValue(p, as: T.self) }
        return try view.container.build(registration, as: type, ts: ts, view: view)
    }

    /// Refuses a resolve by owner from a factory whose plugin does not require `owner`:
    /// a reload of `owner` would not rebuild it, and it would keep `owner`'s retired build,
    /// stopped and drained, while the reload said applied. Outside a factory, or for a
    /// transaction no manifest described, there is nothing to check against.
    private func checkRequired<T>(_ owner: String, for type: T.Type, name: String?) throws(PlugboardError) {
        let ts = ThreadState.current()
        guard ts.pointee.depth > 0 else { return }
        let building = ts.pointee.stack[ts.pointee.depth - 1].takeUnretainedValue()
        // What a layer wraps is a requirement too, as the manifest counts it.
        guard let requires = building.requires, building.owner != owner, building.wraps != owner,
              !requires.contains(owner) else { return }
        let service = ServiceType.of(T.self).displayName + (name.map { " (name \"\($0)\")" } ?? "")
        let listed = requires.isEmpty ? "none" : requires.map { "\"\($0)\"" }.joined(separator: ", ")
        throw PlugboardError(.ownerNotRequired,
            "plugin \"\(building.owner)\" resolves the \(service) of \"\(owner)\" without requiring \"\(owner)\"",
            detail: "Expected \"\(owner)\" among the plugins the manifest entry \"\(building.owner)\" requires, so that a reload of \"\(owner)\" rebuilds it; found \(listed).",
            hint: "Add \"\(owner)\" to \"requires\" in the manifest entry \"\(building.owner)\".")
    }
}

extension Container {
    /// The provider of `type` (under `name`) that `owner` registered itself (not a layer
    /// over it) in the current generation, built if it is not yet; nil when `owner` has
    /// none. Not API (`_`): the host's, for an isolated layer, whose worker is served the
    /// provider it wraps while the worker starts, before the layer's own commit.
    public func _provider<T>(_ type: T.Type, name: String?, ownedBy owner: String) throws(PlugboardError) -> T? {
        try Resolver(container: self, pinned: nil).provider(ServiceKey(T.self, name: name), ownedBy: owner, as: type)
    }
}
