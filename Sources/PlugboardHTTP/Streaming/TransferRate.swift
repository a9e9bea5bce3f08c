/// Bytes moved in the last ``window`` seconds, in one-second buckets: the minimum
/// transfer rate is checked over this sliding window, not as an average since the start
/// (a client could send fast, then trickle for hours) nor per system call (a client could
/// take one byte every few seconds forever).
struct TransferRate {
    static let window = 10
    /// The window's full seconds and the current one, still filling.
    private var buckets = [Int](repeating: 0, count: TransferRate.window + 1)
    private var second = 0
    /// When the measured stretch began: the window is shorter until it is full.
    private(set) var since: Double

    init(now: Double) {
        since = now
        second = Int(now)
    }

    mutating func add(_ bytes: Int, now: Double) {
        advance(to: now)
        buckets[second % buckets.count] += bytes
    }

    /// Starts measuring afresh (after a pause that was not the peer's doing).
    mutating func restart(now: Double) {
        self = TransferRate(now: now)
    }

    /// Whether fewer than `minimum` bytes per second moved over the last full window:
    /// the ``window`` whole seconds before the current one (which is still filling, and
    /// would make a client that keeps the rate in bursts look slow).
    mutating func isBelow(_ minimum: Int, now: Double) -> Bool {
        guard now - since >= Double(Self.window + 1) else { return false }
        advance(to: now)
        return buckets.reduce(0, +) - buckets[second % buckets.count] < minimum * Self.window
    }

    private mutating func advance(to now: Double) {
        let target = Int(now)
        guard target > second else { return }
        if target - second >= buckets.count {
            for i in buckets.indices { buckets[i] = 0 }
        } else {
            for s in (second + 1)...target { buckets[s % buckets.count] = 0 }
        }
        second = target
    }
}
