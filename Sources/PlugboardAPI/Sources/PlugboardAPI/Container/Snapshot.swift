import Synchronization

/// One immutable generation of a container's registrations: what resolvers read.
///
/// Every key the container has ever seen has a stable index (`keyIndex`), so a
/// ``ServiceHandle`` can remember it and read `winners[index]` with no lookup. Unnamed
/// keys are also found through a small open-addressing table keyed by the bits of the
/// type's `ObjectIdentifier`: hashing a pointer with one multiply is far cheaper than
/// `Hasher`, and a resolve by type is the hot path. Named keys go through `keyIndex`.
///
/// `@unchecked Sendable`: nothing is mutated after `init`; the raw buffers are owned and
/// freed by this object.
final class Snapshot: @unchecked Sendable {
    let generation: UInt64
    /// Every registration per key index, best first. Holds the registrations alive.
    let ranked: [[Registration]]
    let keyIndex: [ServiceKey: Int]
    let keys: [ServiceKey]
    /// The lookup tables, in raw memory that thread slots point at directly.
    let tables: UnsafeMutablePointer<SnapshotTables>

    init(generation: UInt64, ranked: [[Registration]], keyIndex: [ServiceKey: Int], keys: [ServiceKey]) {
        self.generation = generation
        self.ranked = ranked
        self.keyIndex = keyIndex
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
        tables = .allocate(capacity: 1)
        tables.initialize(to: SnapshotTables(probeMask: capacity - 1, winnerCount: ranked.count,
                                             probe: probe, winners: winners))
    }

    deinit {
        tables.pointee.winners.deallocate()
        tables.pointee.probe.deallocate()
        tables.deallocate()
    }

    static let empty = Snapshot(generation: 0, ranked: [], keyIndex: [:], keys: [])

    /// The key index of any key, or -1.
    func index(of key: ServiceKey) -> Int {
        key.name == nil ? tables.pointee.index(ofType: key.type) : (keyIndex[key] ?? -1)
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

    let probeMask: Int
    let winnerCount: Int
    let probe: UnsafeMutablePointer<ProbeBucket>
    let winners: UnsafeMutablePointer<Winner>

    @inline(__always)
    static func hash(_ bits: UInt) -> Int {
        // Fibonacci hashing; metadata pointers are aligned, so drop the low bits.
        Int(truncatingIfNeeded: ((bits >> 4) &* 0x9E37_79B9_7F4A_7C15) >> 32)
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
