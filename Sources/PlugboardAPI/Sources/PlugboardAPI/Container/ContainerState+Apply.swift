/// One transaction's operations with their owner, as a commit applies them.
struct Batch {
    var ops: [Transaction.Op]
    var owner: String
}

extension ContainerState {
    /// What one transaction changed.
    struct Changes {
        /// Registrations this transaction publishes.
        var added: [Registration] = []
        /// Published registrations removed, each with the registration that replaced it, if any.
        var removed: [(old: Registration, replacement: Registration?)] = []
        /// Registrations this transaction added and removed again: never published.
        var discarded: [Registration] = []

        /// Records that `old` left the ranking. A registration added earlier in the same
        /// transaction was never published: it just disappears, and whatever it replaced
        /// is now replaced by `replacement`.
        mutating func remove(_ old: Registration, replacedBy replacement: Registration?) {
            guard let k = added.firstIndex(where: { $0 === old }) else {
                removed.append((old, replacement))
                return
            }
            added.remove(at: k)
            discarded.append(old)
            if let r = removed.firstIndex(where: { $0.replacement === old }) {
                removed[r].replacement = replacement
            }
        }
    }

    /// Applies `ops` by `owner`, all or nothing: on error `self` is unchanged.
    mutating func apply(_ ops: [Transaction.Op], owner: String) throws(PlugboardError) -> Changes {
        try apply([Batch(ops: ops, owner: owner)])
    }

    /// Applies each batch with its own owner, in order, all or nothing: on error `self`
    /// is unchanged. One ``Changes`` covers them all, so a registration one batch adds and
    /// a later one removes was never published.
    mutating func apply(_ batches: [Batch]) throws(PlugboardError) -> Changes {
        var next = self
        var changes = Changes()
        for batch in batches {
            try next.apply(batch.ops, owner: batch.owner, into: &changes)
        }
        // Stacks are checked once all batches applied: a hot swap removes a wrapped
        // provider in one batch and adds its new build in a later one.
        let touched = Set((changes.added + changes.removed.map(\.old)).compactMap { next.keyIndex[$0.key] })
        for i in touched.sorted() {
            next.ranked[i] = try Self.stacked(next.ranked[i])
        }
        self = next
        return changes
    }

    private mutating func apply(_ ops: [Transaction.Op], owner: String, into changes: inout Changes) throws(PlugboardError) {
        var next = self
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
                    changes.remove(old, replacedBy: reg)
                    // A replacement keeps its place among equal ranks (OSGi's "modified"):
                    // swapping one's own implementation does not hand a tie to another owner.
                    reg.sequence = old.sequence
                } else {
                    next.sequence += 1
                    reg.sequence = next.sequence
                }
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
                changes.remove(next.ranked[i].remove(at: j), replacedBy: nil)
            case .removeAll:
                for i in next.ranked.indices {
                    let mine = next.ranked[i].filter { $0.owner == owner }
                    guard !mine.isEmpty else { continue }
                    next.ranked[i].removeAll { $0.owner == owner }
                    for old in mine { changes.remove(old, replacedBy: nil) }
                }
            }
        }
        self = next
    }

    /// `ranked`, one key's registrations best first, with each layer moved to just above
    /// the registration it wraps: a stack stands where its bottom provider's rank puts it,
    /// whatever the layers' own ranks.
    static func stacked(_ ranked: [Registration]) throws(PlugboardError) -> [Registration] {
        guard ranked.contains(where: { $0.wraps != nil }) else { return ranked }
        var above: [String: Registration] = [:]
        for layer in ranked {
            guard let target = layer.wraps else { continue }
            if let other = above[target] {
                throw PlugboardError(.layerSlotTaken,
                    "layers \"\(other.owner)\" and \"\(layer.owner)\" both wrap the \(layer.displayName) of \"\(target)\"",
                    detail: "A provider has one slot above it: each layer wraps exactly one provider, and one provider is wrapped by at most one layer.",
                    hint: "Stack them instead: let \"\(layer.owner)\" wrap \"\(other.owner)\" (\"wraps\": \"\(other.owner)\" in its manifest entry).")
            }
            above[target] = layer
        }
        var out: [Registration] = []
        out.reserveCapacity(ranked.count)
        // Each new registration was inserted by rank among layers whose own ranks say
        // nothing of their place: the plain ones are put back in ranking order here.
        let bases = ranked.filter { $0.wraps == nil }.sorted(by: Registration.ranksBefore)
        for base in bases {
            var stack = [base]
            while let layer = above[stack[stack.count - 1].owner], !stack.contains(where: { $0 === layer }) {
                stack.append(layer)
            }
            // Only the best stack answers a resolve (a resolve by owner skips layers): a
            // layer anywhere else is reached only by resolveAll, and a quota or a mirror
            // that nobody goes through is a wrong result nobody reports.
            if let best = bases.first, best !== base, let layer = stack.dropFirst().first(where: { !$0.mayBeOutranked }) {
                throw outranked(layer, over: base, by: best)
            }
            out += stack.reversed()
        }
        if out.count < ranked.count,
           let orphan = ranked.first(where: { reg in !out.contains { $0 === reg } }), let target = orphan.wraps {
            let owners = ranked.filter { $0.wraps == nil }.map { "\"\($0.owner)\"" }
            throw PlugboardError(.layerTargetMissing,
                "layer \"\(orphan.owner)\" wraps \"\(target)\", which provides no \(orphan.displayName)",
                detail: owners.isEmpty ? "Nobody else provides \(orphan.displayName)."
                    : "Expected a provider of \(orphan.displayName) owned by \"\(target)\" (or a layer above it), found only \(owners.joined(separator: ", ")).",
                hint: "Make \"wraps\" in the manifest entry \"\(orphan.owner)\" name the plugin that registers \(orphan.displayName), and load that plugin.")
        }
        return out
    }

    static func outranked(_ layer: Registration, over base: Registration, by best: Registration) -> PlugboardError {
        PlugboardError(.layerOutranked,
            "layer \"\(layer.owner)\" over \"\(base.owner)\" would never be used: \"\(best.owner)\" outranks \"\(base.owner)\" as the provider of \(layer.displayName)",
            detail: "Expected the plugin a layer wraps to be the best provider of \(layer.displayName), so that resolving it reaches the layer; found \"\(best.owner)\" (rank \(best.rank)) before \"\(base.owner)\" (rank \(base.rank)). Equal ranks go to the plugin loaded first, and a plugin in \"requires\" loads first.",
            hint: "Give \"\(best.owner)\" a lower rank than \"\(base.owner)\" (\"rank\": \(base.rank - 1) in its manifest entry), or let the layer wrap \"\(best.owner)\". A layer meant for consumers of resolveAll registers with mayBeOutranked: true.")
    }

    /// A snapshot of the registrations as they are now, labelled `generation`.
    func makeSnapshot(generation: UInt64) -> Snapshot {
        Snapshot(generation: generation, ranked: ranked, keys: keys)
    }
}
