/// Bytes moved in the last ``window`` seconds, in one-second buckets: the minimum
/// transfer rate is checked over this sliding window, not as an average since the start
/// (a client could send fast, then trickle for hours) nor per system call (a client could
/// take one byte every few seconds forever).
struct TransferRate {
    /// The shortest window, in seconds.
    static let minimumWindow = 10
    /// The window's length in whole seconds.
    let window: Int
    /// The window's full seconds and the current one, still filling.
    private var buckets: [Int]
    private var second = 0
    /// When the measured stretch began: the window is shorter until it is full.
    private(set) var since: Double

    /// A window of `seconds` (at least ``minimumWindow``). The server gives it the longest
    /// pause it allows inside a body, so that a pause it allows is never judged too slow
    /// by itself: with `--request-timeout 120`, a 10 s window refused a client that had
    /// sent 200 MiB and then paused for 11 s.
    init(now: Double, windowSeconds seconds: Double = 0) {
        window = max(Self.minimumWindow, Int(seconds.rounded(.up)))
        buckets = [Int](repeating: 0, count: window + 1)
        since = now
        second = Int(now)
    }

    mutating func add(_ bytes: Int, now: Double) {
        advance(to: now)
        buckets[second % buckets.count] += bytes
    }

    /// Starts measuring afresh (after a pause that was not the peer's doing).
    /// In place: every answer restarts its connection's write window, and making a new
    /// one allocated its buckets each time.
    mutating func restart(now: Double) {
        for i in buckets.indices { buckets[i] = 0 }
        since = now
        second = Int(now)
    }

    /// Whether fewer than `minimum` bytes per second moved over the last full window:
    /// the ``window`` whole seconds before the current one (which is still filling, and
    /// would make a client that keeps the rate in bursts look slow).
    mutating func isBelow(_ minimum: Int, now: Double) -> Bool {
        guard now - since >= Double(window + 1) else { return false }
        advance(to: now)
        return buckets.reduce(0, +) - buckets[second % buckets.count] < minimum * window
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
