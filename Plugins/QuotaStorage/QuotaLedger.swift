import PlugboardAPI
import PlugboardConcurrency

/// What a `QuotaStorage` counts: the size of every object stored through it (or found
/// below it at start) and the room reserved by puts in flight.
///
/// A put reserves its bytes (and a slot for a new key) before it writes, so two racing
/// puts cannot both pass a limit; the reservation becomes the object's size when the put
/// succeeds, and is released when it fails. Until then an overwrite counts both the old
/// object and the new bytes: it needs room for both while it runs.
final class QuotaLedger: Sendable {
    struct Reservation: Sendable {
        let id: UInt64
    }

    private struct Held {
        var key: String
        var bytes: Int
        /// Whether it holds an object slot (the key had no object when it was reserved).
        var slot: Bool
    }

    private struct State {
        var sizes: [String: Int] = [:]
        /// Stored and reserved bytes, all keys.
        var bytes = 0
        /// Stored objects and reserved slots.
        var objects = 0
        /// Stored and reserved bytes per prefix, as `limits.prefixes` lists them.
        var prefixBytes: [Int]
        var held: [UInt64: Held] = [:]
        var nextID: UInt64 = 0
    }

    let limits: QuotaLimits
    let plugin: String
    private let state: LockedValueBox<State>

    init(limits: QuotaLimits, plugin: String) {
        self.limits = limits
        self.plugin = plugin
        self.state = LockedValueBox(State(prefixBytes: Array(repeating: 0, count: limits.prefixes.count)))
    }

    /// Bytes and objects counted now, reservations included.
    var usage: (bytes: Int, objects: Int) { state.withLock { ($0.bytes, $0.objects) } }

    /// Counts an object found below at start.
    func found(_ key: String, size: Int) {
        state.withLock { st in
            let old = st.sizes.updateValue(size, forKey: key)
            add(&st, key: key, bytes: size - (old ?? 0), objects: old == nil ? 1 : 0)
        }
    }

    /// Reserves `bytes` for a put of `key`, or throws `quota.exceeded` naming the limit.
    func reserve(_ key: String, bytes: Int) throws(PlugboardError) -> Reservation {
        try state.withLock { (st: inout State) throws(PlugboardError) -> Reservation in
            let slot = st.sizes[key] == nil
            try check(st, key: key, bytes: bytes, objects: slot ? 1 : 0)
            add(&st, key: key, bytes: bytes, objects: slot ? 1 : 0)
            st.nextID += 1
            st.held[st.nextID] = Held(key: key, bytes: bytes, slot: slot)
            return Reservation(id: st.nextID)
        }
    }

    /// Adds `bytes` to a reservation, for a body whose length was not known in advance.
    func grow(_ reservation: Reservation, by bytes: Int) throws(PlugboardError) {
        try state.withLock { (st: inout State) throws(PlugboardError) in
            guard let held = st.held[reservation.id] else { return }
            try check(st, key: held.key, bytes: bytes, objects: 0)
            add(&st, key: held.key, bytes: bytes, objects: 0)
            st.held[reservation.id]?.bytes += bytes
        }
    }

    /// The put succeeded: the object now has `size` bytes, and the old one is gone.
    func commit(_ reservation: Reservation, size: Int) {
        state.withLock { st in
            guard let held = st.held.removeValue(forKey: reservation.id) else { return }
            let old = st.sizes.updateValue(size, forKey: held.key)
            let objects = (old == nil ? 1 : 0) - (held.slot ? 1 : 0)
            add(&st, key: held.key, bytes: size - held.bytes - (old ?? 0), objects: objects)
        }
    }

    /// The put failed: its reservation is given back.
    func release(_ reservation: Reservation) {
        state.withLock { st in
            guard let held = st.held.removeValue(forKey: reservation.id) else { return }
            add(&st, key: held.key, bytes: -held.bytes, objects: held.slot ? -1 : 0)
        }
    }

    /// `key` was deleted below.
    func deleted(_ key: String) {
        state.withLock { st in
            guard let old = st.sizes.removeValue(forKey: key) else { return }
            add(&st, key: key, bytes: -old, objects: -1)
        }
    }

    private func add(_ st: inout State, key: String, bytes: Int, objects: Int) {
        st.bytes += bytes
        st.objects += objects
        for (i, limit) in limits.prefixes.enumerated() where key.hasPrefix(limit.prefix) {
            st.prefixBytes[i] += bytes
        }
    }

    private func check(_ st: State, key: String, bytes: Int, objects: Int) throws(PlugboardError) {
        if st.bytes + bytes > limits.maxBytes {
            throw exceeded(key, "maxBytes", limit: limits.maxBytes, used: st.bytes, asked: bytes, unit: "bytes")
        }
        if let max = limits.maxObjects, objects > 0, st.objects + objects > max {
            throw exceeded(key, "maxObjects", limit: max, used: st.objects, asked: objects, unit: "objects")
        }
        for (i, limit) in limits.prefixes.enumerated() where key.hasPrefix(limit.prefix) && st.prefixBytes[i] + bytes > limit.maxBytes {
            throw exceeded(key, "prefixes[\"\(limit.prefix)\"]", limit: limit.maxBytes, used: st.prefixBytes[i], asked: bytes, unit: "bytes")
        }
    }

    private func exceeded(_ key: String, _ name: String, limit: Int, used: Int, asked: Int, unit: String) -> PlugboardError {
        PlugboardError(QuotaStorage.exceededCode,
            "put of \"\(key)\" would exceed the quota of plugin \"\(plugin)\": \(name) is \(limit) \(unit)",
            detail: "Expected at most \(limit) \(unit), found \(used) in use (puts in flight included) and \(asked) more asked. Nothing was stored.",
            hint: "Delete objects to make room, or raise \(name) in the config of \"\(plugin)\".")
    }
}
