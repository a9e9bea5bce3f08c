import Synchronization

/// One immutable generation of a container's registrations: what resolvers read.
///
/// Every key the container has ever seen has a stable index (``ContainerState/keyIndex``),
/// so a ``ServiceHandle`` can remember it and read `winners[index]` with no lookup. Keys
/// are also found through two small open-addressing tables: unnamed ones by the bits of
/// the type's `ObjectIdentifier` (hashing a pointer with one multiply is far cheaper than
/// `Hasher`, and a resolve by type is the hot path), named ones by those bits and a hash
/// of the name's UTF-8 bytes (`Hasher` over a `ServiceKey` costs several times a resolve).
///
/// `@unchecked Sendable`: nothing but the atomic lease count is mutated after `init`; the
/// raw buffers are owned and freed by this object.
final class Snapshot: @unchecked Sendable {
    let generation: UInt64
    /// Every registration per key index, best first. Holds the registrations alive.
    let ranked: [[Registration]]
    let keys: [ServiceKey]
    /// The lookup tables, in raw memory that thread slots point at directly.
    let tables: UnsafeMutablePointer<SnapshotTables>

    /// Leases open on this generation (``Container/lease()``): counted here, with no lock
    /// and no hashing, and read by the drain check through ``ContainerState/leased``.
    let leases = Atomic<Int>(0)

    init(generation: UInt64, ranked: [[Registration]], keys: [ServiceKey]) {
        self.generation = generation
        self.ranked = ranked
        self.keys = keys
        let winners = UnsafeMutablePointer<SnapshotTables.Winner>.allocate(capacity: max(ranked.count, 1))
        winners.initialize(repeating: SnapshotTables.Winner(), count: max(ranked.count, 1))
        for (i, regs) in ranked.enumerated() {
            if let first = regs.first {
                let transientFactory = first.scope == .transient ? first.factory.map {
                    UnsafeRawPointer(Unmanaged.passUnretained($0 as AnyObject).toOpaque())
                } : nil
                winners[i] = SnapshotTables.Winner(cell: first.builtCell,
                                                   registration: UnsafeRawPointer(Unmanaged.passUnretained(first).toOpaque()),
                                                   transientFactory: transientFactory)
            }
        }
        var capacity = 8
        while capacity < keys.count * 2 { capacity *= 2 }
        let probe = UnsafeMutablePointer<SnapshotTables.ProbeBucket>.allocate(capacity: capacity)
        probe.initialize(repeating: SnapshotTables.ProbeBucket(), count: capacity)
        for (i, key) in keys.enumerated() where key.name == nil {
            let bits = UInt(bitPattern: key.type)
            var slot = SnapshotTables.hash(bits) & (capacity - 1)
            while probe[slot].type != 0 { slot = (slot + 1) & (capacity - 1) }
            probe[slot] = SnapshotTables.ProbeBucket(type: bits, index: i)
        }
        let namedCount = keys.count(where: { $0.name != nil })
        var namedCapacity = 8
        while namedCapacity < namedCount * 2 { namedCapacity *= 2 }
        let named = UnsafeMutablePointer<SnapshotTables.NamedBucket>.allocate(capacity: namedCapacity)
        named.initialize(repeating: SnapshotTables.NamedBucket(), count: namedCapacity)
        for (i, key) in keys.enumerated() {
            guard let name = key.name else { continue }
            let bits = UInt(bitPattern: key.type)
            let hash = SnapshotTables.hash(bits, name: name)
            var slot = Int(truncatingIfNeeded: hash) & (namedCapacity - 1)
            while named[slot].type != 0 { slot = (slot + 1) & (namedCapacity - 1) }
            named[slot] = SnapshotTables.NamedBucket(type: bits, hash: hash, index: i, name: name)
        }
        tables = .allocate(capacity: 1)
        tables.initialize(to: SnapshotTables(probeMask: capacity - 1, namedMask: namedCapacity - 1,
                                             winnerCount: ranked.count, probe: probe, named: named,
                                             winners: winners))
    }

    deinit {
        tables.pointee.winners.deallocate()
        tables.pointee.probe.deallocate()
        tables.pointee.named.deinitialize(count: tables.pointee.namedMask + 1)
        tables.pointee.named.deallocate()
        tables.deallocate()
    }

    /// A container's first generation, before anything is registered: one per container,
    /// since leases on it are counted in it.
    static func empty() -> Snapshot { Snapshot(generation: 0, ranked: [], keys: []) }

    /// The key index of any key, or -1.
    func index(of key: ServiceKey) -> Int {
        guard let name = key.name else { return tables.pointee.index(ofType: key.type) }
        return tables.pointee.index(ofType: key.type, name: name)
    }

    /// The winning registration at a key index, retained; nil if nobody provides it.
    func winner(at index: Int) -> Registration? {
        index >= 0 && index < ranked.count ? ranked[index].first : nil
    }
}

/// A snapshot's lookup tables: plain memory, no reference counting, so the resolve path
/// can read them through a pointer kept in the thread's cache slot.
struct SnapshotTables {
    struct ProbeBucket {
        var type: UInt = 0  // 0: empty; ObjectIdentifiers are never null
        var index: Int = 0
    }

    /// The winner of a key: its built-value cell and the registration, both unretained
    /// (the snapshot's `ranked` holds the registrations alive).
    struct Winner {
        var cell: UnsafeMutablePointer<Atomic<UnsafeRawPointer?>>?
        var registration: UnsafeRawPointer?
        /// The `FactoryBox<T>` of a transient registration, so a transient resolve needs no
        /// second lookup.
        var transientFactory: UnsafeRawPointer?
    }

    /// A named key: the type's bits, the full hash (compared before the name, so a probe
    /// past another key costs no string comparison), its index and the name.
    struct NamedBucket {
        var type: UInt = 0  // 0: empty
        var hash: UInt = 0
        var index: Int = 0
        var name = ""
    }

    let probeMask: Int
    let namedMask: Int
    let winnerCount: Int
    let probe: UnsafeMutablePointer<ProbeBucket>
    let named: UnsafeMutablePointer<NamedBucket>
    let winners: UnsafeMutablePointer<Winner>

    @inline(__always)
    static func hash(_ bits: UInt) -> Int {
        // Fibonacci hashing; metadata pointers are aligned, so drop the low bits.
        Int(truncatingIfNeeded: ((bits >> 4) &* 0x9E37_79B9_7F4A_7C15) >> 32)
    }

    /// The hash of a named key. Not `Hasher`: its per-process seed and SipHash rounds
    /// cost more than the rest of a named resolve, and these tables never leave the
    /// process nor take keys from outside it, so a seedless multiply-xor hash is enough.
    @inline(__always)
    static func hash(_ bits: UInt, name: String) -> UInt {
        let h = name.utf8.withContiguousStorageIfAvailable { hash(bytes: UnsafeRawBufferPointer($0)) }
            ?? Array(name.utf8).withUnsafeBytes { hash(bytes: $0) }
        let mixed = (UInt64(h) ^ UInt64(bits >> 4)) &* 0x9E37_79B9_7F4A_7C15
        return UInt(truncatingIfNeeded: mixed ^ (mixed >> 32))
    }

    /// Eight bytes at a time, then the tail in one word.
    @inline(__always)
    private static func hash(bytes: UnsafeRawBufferPointer) -> UInt {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(truncatingIfNeeded: bytes.count)
        var i = 0
        while i + 8 <= bytes.count {
            h = (h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < bytes.count {
            tail |= UInt64(bytes[i]) << shift
            shift &+= 8
            i += 1
        }
        h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        return UInt(truncatingIfNeeded: h ^ (h >> 29))
    }

    /// The key index of a named key, or -1.
    @inline(__always)
    func index(ofType type: ObjectIdentifier, name: String) -> Int {
        let bits = UInt(bitPattern: type)
        let hash = Self.hash(bits, name: name)
        var slot = Int(truncatingIfNeeded: hash) & namedMask
        while true {
            let bucket = named + slot
            if bucket.pointee.type == 0 { return -1 }
            if bucket.pointee.hash == hash && bucket.pointee.type == bits && bucket.pointee.name == name {
                return bucket.pointee.index
            }
            slot = (slot + 1) & namedMask
        }
    }

    /// The key index of an unnamed key, or -1.
    @inline(__always)
    func index(ofType type: ObjectIdentifier) -> Int {
        let bits = UInt(bitPattern: type)
        var slot = Self.hash(bits) & probeMask
        while true {
            let bucket = probe[slot]
            if bucket.type == bits { return bucket.index }
            if bucket.type == 0 { return -1 }
            slot = (slot + 1) & probeMask
        }
    }

    /// The winner at a key index; an empty one if the index is past this snapshot's keys
    /// (a handle made after it) or nobody provides the key.
    @inline(__always)
    func winner(at index: Int) -> Winner {
        UInt(bitPattern: index) < UInt(bitPattern: winnerCount) ? winners[index] : Winner()
    }
}
