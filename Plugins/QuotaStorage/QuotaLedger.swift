import PlugboardAPI
import PlugboardConcurrency

/// What a `QuotaStorage` counts: the size of every object stored through it (or found
/// below it at start), its data and its user metadata, the parts of multipart uploads in
/// progress, and the room reserved by puts in flight.
///
/// A put reserves its bytes (and a slot for a new key) before it writes, so two racing
/// puts cannot both pass a limit; the reservation becomes the object's size when the put
/// succeeds, and is released when it fails. Until then an overwrite counts both the old
/// object and the new bytes: it needs room for both while it runs.
final class QuotaLedger: Sendable {
    struct Reservation: Sendable {
        let id: UInt64
    }

    /// How a stored key counts.
    struct Charge: Sendable {
        /// The key whose prefixes the bytes count under: the object's own, or for a part
        /// the object it is for.
        var prefixKey: String
        /// Whether it takes an object slot (`maxObjects`): a user's object does, a part does not.
        var isObject: Bool
        /// The upload a part belongs to, so that the object completing it may allow for it.
        var upload: String?

        static func object(_ key: String) -> Charge { Charge(prefixKey: key, isObject: true) }
    }

    private struct Entry {
        var bytes: Int
        var charge: Charge
    }

    private struct Held {
        var key: String
        var bytes: Int
        var charge: Charge
        /// Whether it holds an object slot (the key had no object when it was reserved).
        var slot: Bool
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Stored and reserved bytes, all keys.
        var bytes = 0
        /// Stored objects and reserved slots.
        var objects = 0
        /// Stored and reserved bytes per prefix, as `limits.prefixes` lists them.
        var prefixBytes: [Int]
        /// Stored and reserved bytes of the parts of each upload in progress.
        var partBytes: [String: Int] = [:]
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

    /// Counts a key found below at start.
    func found(_ key: String, bytes: Int, charge: Charge) {
        state.withLock { st in
            remove(&st, key)
            st.entries[key] = Entry(bytes: bytes, charge: charge)
            add(&st, charge, bytes: bytes, objects: charge.isObject ? 1 : 0)
        }
    }

    /// Reserves `bytes` for a put of `key`, or throws `quota.exceeded` naming the limit
    /// and `what` was refused. `allowingPartsOf` names the upload whose parts the put
    /// stores again (the object that completes it): their bytes, deleted right after,
    /// are not asked for twice.
    func reserve(_ key: String, bytes: Int, charge: Charge, what: String, allowingPartsOf upload: String? = nil)
        throws(PlugboardError) -> Reservation {
        try state.withLock { (st: inout State) throws(PlugboardError) -> Reservation in
            let slot = charge.isObject && st.entries[key]?.charge.isObject != true
            let allowance = upload.map { st.partBytes[$0] ?? 0 } ?? 0
            try check(st, charge: charge, bytes: bytes, objects: slot ? 1 : 0, allowance: allowance, what: what)
            add(&st, charge, bytes: bytes, objects: slot ? 1 : 0)
            st.nextID += 1
            st.held[st.nextID] = Held(key: key, bytes: bytes, charge: charge, slot: slot)
            return Reservation(id: st.nextID)
        }
    }

    /// Throws `quota.exceeded` unless an object of `bytes` more under `key` would fit now;
    /// reserves nothing (a multipart upload announced: its parts reserve their bytes).
    func requireRoom(_ key: String, bytes: Int, what: String) throws(PlugboardError) {
        try state.withLock { (st: inout State) throws(PlugboardError) in
            let slot = st.entries[key]?.charge.isObject != true
            try check(st, charge: .object(key), bytes: bytes, objects: slot ? 1 : 0, allowance: 0, what: what)
        }
    }

    /// Adds `bytes` to a reservation, for a body whose length was not known in advance.
    func grow(_ reservation: Reservation, by bytes: Int, what: String) throws(PlugboardError) {
        try state.withLock { (st: inout State) throws(PlugboardError) in
            guard let held = st.held[reservation.id] else { return }
            try check(st, charge: held.charge, bytes: bytes, objects: 0, allowance: 0, what: what)
            add(&st, held.charge, bytes: bytes, objects: 0)
            st.held[reservation.id]?.bytes += bytes
        }
    }

    /// The put succeeded: the key now holds `bytes`, and what it held before is gone.
    func commit(_ reservation: Reservation, bytes: Int) {
        state.withLock { st in
            guard let held = st.held.removeValue(forKey: reservation.id) else { return }
            add(&st, held.charge, bytes: -held.bytes, objects: held.slot ? -1 : 0)
            remove(&st, held.key)
            st.entries[held.key] = Entry(bytes: bytes, charge: held.charge)
            add(&st, held.charge, bytes: bytes, objects: held.charge.isObject ? 1 : 0)
        }
    }

    /// The put failed: its reservation is given back.
    func release(_ reservation: Reservation) {
        state.withLock { st in
            guard let held = st.held.removeValue(forKey: reservation.id) else { return }
            add(&st, held.charge, bytes: -held.bytes, objects: held.slot ? -1 : 0)
        }
    }

    /// `key` was deleted below, or is no longer counted (the front end's record).
    func deleted(_ key: String) {
        state.withLock { st in remove(&st, key) }
    }

    private func remove(_ st: inout State, _ key: String) {
        guard let old = st.entries.removeValue(forKey: key) else { return }
        add(&st, old.charge, bytes: -old.bytes, objects: old.charge.isObject ? -1 : 0)
    }

    private func add(_ st: inout State, _ charge: Charge, bytes: Int, objects: Int) {
        st.bytes += bytes
        st.objects += objects
        for (i, limit) in limits.prefixes.enumerated() where charge.prefixKey.hasPrefix(limit.prefix) {
            st.prefixBytes[i] += bytes
        }
        if let upload = charge.upload, !charge.isObject {
            let total = (st.partBytes[upload] ?? 0) + bytes
            st.partBytes[upload] = total == 0 ? nil : total
        }
    }

    private func check(_ st: State, charge: Charge, bytes: Int, objects: Int, allowance: Int, what: String) throws(PlugboardError) {
        if st.bytes - allowance + bytes > limits.maxBytes {
            throw exceeded(what, "maxBytes", limit: limits.maxBytes, used: st.bytes - allowance, asked: bytes, unit: "bytes")
        }
        if let max = limits.maxObjects, objects > 0, st.objects + objects > max {
            throw exceeded(what, "maxObjects", limit: max, used: st.objects, asked: objects, unit: "objects")
        }
        for (i, limit) in limits.prefixes.enumerated()
        where charge.prefixKey.hasPrefix(limit.prefix) && st.prefixBytes[i] - allowance + bytes > limit.maxBytes {
            throw exceeded(what, "prefixes[\"\(limit.prefix)\"]", limit: limit.maxBytes, used: st.prefixBytes[i] - allowance,
                           asked: bytes, unit: "bytes")
        }
    }

    private func exceeded(_ what: String, _ name: String, limit: Int, used: Int, asked: Int, unit: String) -> PlugboardError {
        PlugboardError(QuotaStorage.exceededCode,
            "\(what) would exceed the quota of plugin \"\(plugin)\": \(name) is \(limit) \(unit)",
            detail: "Expected at most \(limit) \(unit), found \(used) in use (puts in flight, user metadata and parts of uploads in progress included) and \(asked) more asked. Nothing was stored.",
            hint: "Delete objects (or abort uploads in progress) to make room, or raise \(name) in the config of \"\(plugin)\".")
    }
}
