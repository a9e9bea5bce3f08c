extension Container {
    /// `container.not_registered` for `key`, described only when someone reads it: the
    /// closest registered services, and the copied-protocol hint when a service of the
    /// same unqualified name comes from another module.
    static func notRegistered<T>(_ key: ServiceKey, type: T.Type, from container: Container) -> PlugboardError {
        PlugboardError(.notRegistered,
                       text: NotRegisteredText(.container(container), requested: ServiceType.of(T.self), name: key.name))
    }

    /// `container.not_registered` for a miss of `T` under `name` in this container, which
    /// has no parent, on the generation this thread reads: the texts of this thread's last
    /// miss when it was the same, so that probing again costs no allocation.
    func missed<T>(_: T.Type, name: String?, ts: UnsafeMutablePointer<ThreadState>) -> PlugboardError {
        let slot = currentSlot(ts)
        if let last = slot.pointee.lastMiss?.takeUnretainedValue(), last.describes(ObjectIdentifier(T.self), name: name) {
            return PlugboardError(.notRegistered, text: last)
        }
        let snapshot = slot.pointee.snapshot?.takeUnretainedValue() ?? snapshotNow()
        let text = NotRegisteredText(.snapshot(snapshot), requested: ServiceType.of(T.self), name: name)
        slot.pointee.lastMiss?.release()
        slot.pointee.lastMiss = Unmanaged.passRetained(text)
        return PlugboardError(.notRegistered, text: text)
    }

    /// Every key with a provider, here and in the parents, with its display name.
    func registeredKeys() -> [(type: ServiceType, name: String?)] {
        var out: [(type: ServiceType, name: String?)] = []
        var c: Container? = self
        while let container = c {
            out += Self.registeredKeys(of: container.snapshotNow())
            c = container.parent
        }
        return out
    }

    /// Every key with a provider in one snapshot, with its display name.
    static func registeredKeys(of snapshot: Snapshot) -> [(type: ServiceType, name: String?)] {
        snapshot.ranked.compactMap { regs in regs.first.map { ($0.serviceType, $0.key.name) } }
    }

    static func describeMiss(requested: ServiceType, name: String?,
                             registered: [(type: ServiceType, name: String?)]) -> PlugboardError.Rendered {
        let wanted = requested.displayName
        let label = name.map { "\(wanted) (name \"\($0)\")" } ?? wanted
        let message = "no service registered for \(label)"
        let unqualified = wanted.split(separator: ".").last.map(String.init) ?? wanted

        // Same type, other names.
        let sameType = registered.filter { ObjectIdentifier($0.type.type) == ObjectIdentifier(requested.type) }
        if !sameType.isEmpty {
            let names = sameType.map { $0.name.map { "\"\($0)\"" } ?? "no name" }.sorted()
            return .init(message: message,
                         detail: "\(wanted) is registered under: \(names.joined(separator: ", ")).",
                         hint: "Resolve it with one of those names, or register a provider under the name you asked for.")
        }
        // Same unqualified name from another module: a copied protocol.
        let copies = registered.map { $0.type.displayName }
            .filter { $0 != wanted && ($0.split(separator: ".").last.map(String.init) ?? $0) == unqualified }
        if let copy = copies.first {
            return .init(message: message,
                         detail: "Registered \(copy), requested \(wanted): the same name in another module is another type.",
                         hint: "The protocol was probably copied into a plugin instead of imported; define it once in a contract package that both sides import.")
        }
        // The closest names, by edit distance.
        let names = Set(registered.map { $0.type.displayName })
        let close = names.map { ($0, editDistance(unqualified.lowercased(),
                                                  ($0.split(separator: ".").last.map(String.init) ?? $0).lowercased())) }
            .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .prefix(3)
            .map(\.0)
        let detail = close.isEmpty
            ? "Nothing is registered."
            : "Closest registered: \(close.joined(separator: ", ")); \(names.count) service type\(names.count == 1 ? "" : "s") in all."
        return .init(message: message, detail: detail,
                     hint: "Register a provider of \(wanted) (is the plugin that provides it loaded and active?).")
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count), cur = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
