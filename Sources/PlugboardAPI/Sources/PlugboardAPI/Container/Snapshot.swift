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
    /// `winners[i]` is `ranked[i].first`, unretained (kept alive by `ranked`).
    private let winners: UnsafeMutablePointer<Unmanaged<Registration>?>
    private let winnerCount: Int
    private let probe: UnsafeMutablePointer<ProbeBucket>
    private let probeMask: Int

    struct ProbeBucket {
        var type: UInt = 0  // 0: empty; ObjectIdentifiers are never null
        var index: Int = 0
    }

    init(generation: UInt64, ranked: [[Registration]], keyIndex: [ServiceKey: Int], keys: [ServiceKey]) {
        self.generation = generation
        self.ranked = ranked
        self.keyIndex = keyIndex
        self.keys = keys
        let count = max(ranked.count, 1)
        winners = .allocate(capacity: count)
        winnerCount = ranked.count
        winners.initialize(repeating: nil, count: count)
        for (i, regs) in ranked.enumerated() {
            if let first = regs.first { winners[i] = Unmanaged.passUnretained(first) }
        }
        var capacity = 8
        while capacity < keys.count * 2 { capacity *= 2 }
        probe = .allocate(capacity: capacity)
        probe.initialize(repeating: ProbeBucket(), count: capacity)
        probeMask = capacity - 1
        for (i, key) in keys.enumerated() where key.name == nil {
            let bits = UInt(bitPattern: key.type)
            var slot = Self.hash(bits) & probeMask
            while probe[slot].type != 0 { slot = (slot + 1) & probeMask }
            probe[slot] = ProbeBucket(type: bits, index: i)
        }
    }

    deinit {
        winners.deallocate()
        probe.deallocate()
    }

    static let empty = Snapshot(generation: 0, ranked: [], keyIndex: [:], keys: [])

    @inline(__always)
    private static func hash(_ bits: UInt) -> Int {
        // Fibonacci hashing; metadata pointers are 16-byte aligned, so drop those bits.
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

    /// The key index of any key, or -1.
    @inline(__always)
    func index(of key: ServiceKey) -> Int {
        key.name == nil ? index(ofType: key.type) : (keyIndex[key] ?? -1)
    }

    /// The winning registration at a key index, unretained; nil if the index is out of
    /// range (a handle made after this snapshot) or nobody provides the key now.
    @inline(__always)
    func winner(at index: Int) -> Unmanaged<Registration>? {
        UInt(bitPattern: index) < UInt(bitPattern: winnerCount) ? winners[index] : nil
    }
}
