extension ContainerState {
    /// What one transaction changed.
    struct Changes {
        var added: [Registration] = []
        /// Registrations removed, each with the registration that replaced it, if any.
        var removed: [(old: Registration, replacement: Registration?)] = []
    }

    /// Applies `ops` by `owner`, all or nothing: on error `self` is unchanged.
    mutating func apply(_ ops: [Transaction.Op], owner: String) throws(PlugboardError) -> Changes {
        var next = self
        var changes = Changes()
        for op in ops {
            switch op {
            case .add(let reg, let replace):
                let i = next.index(for: reg.key)
                if let j = next.ranked[i].firstIndex(where: { $0.owner == owner }) {
                    guard replace else {
                        throw PlugboardError(.duplicateRegistration,
                            "\(owner) already registered \(reg.displayName)",
                            detail: "The owner \"\(owner)\" registered the same service and name twice.",
                            hint: "Use replace to swap the registration, a name to add a second provider, or unregister first.")
                    }
                    let old = next.ranked[i].remove(at: j)
                    changes.removed.append((old, reg))
                }
                next.sequence += 1
                reg.sequence = next.sequence
                let at = next.ranked[i].firstIndex { Registration.ranksBefore(reg, $0) } ?? next.ranked[i].count
                next.ranked[i].insert(reg, at: at)
                changes.added.append(reg)
            case .remove(let key, let type):
                let i = next.keyIndex[key] ?? -1
                guard i >= 0, let j = next.ranked[i].firstIndex(where: { $0.owner == owner }) else {
                    let label = key.name.map { "\(type.displayName) (name \"\($0)\")" } ?? type.displayName
                    throw PlugboardError(.notRegistered, "\(owner) has no registration of \(label) to remove",
                                         detail: "Only the owner of a registration can unregister it.",
                                         hint: "Check the service type and name; use unregisterAll to remove everything of an owner.")
                }
                changes.removed.append((next.ranked[i].remove(at: j), nil))
            case .removeAll:
                for i in next.ranked.indices {
                    let mine = next.ranked[i].filter { $0.owner == owner }
                    guard !mine.isEmpty else { continue }
                    next.ranked[i].removeAll { $0.owner == owner }
                    changes.removed += mine.map { ($0, nil) }
                }
            }
        }
        self = next
        return changes
    }

    /// A snapshot of the registrations as they are now, labelled `generation`.
    func makeSnapshot(generation: UInt64) -> Snapshot {
        Snapshot(generation: generation, ranked: ranked, keyIndex: keyIndex, keys: keys)
    }
}
