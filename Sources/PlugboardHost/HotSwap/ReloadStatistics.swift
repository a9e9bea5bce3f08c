import PlugboardAPI
import PlugboardConcurrency

/// Reload counters for `/metrics`, named as Prometheus and Caddy name theirs, and the last
/// attempt for `/v1/admin/plugins`.
public final class ReloadStatistics: Sendable {
    /// The histogram's upper bounds, in seconds.
    public static let bounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public struct Snapshot: Sendable {
        public var applied = 0
        public var unchanged = 0
        public var refused = 0
        /// Whether the last reload that was not `unchanged` succeeded (1 at start).
        public var lastSuccessful = true
        /// When the configuration last loaded successfully (start-up counts), in seconds
        /// since 1970.
        public var lastSuccessTimestamp: Double
        public var durationCounts = [Int](repeating: 0, count: ReloadStatistics.bounds.count)
        public var durationCount = 0
        public var durationSum = 0.0
        public var lastAttempt: ReloadOutcome?
    }

    private let box: LockedValueBox<Snapshot>

    public init() {
        box = LockedValueBox(Snapshot(lastSuccessTimestamp: Timestamp.now().secondsSince1970))
    }

    func record(_ outcome: ReloadOutcome) {
        box.withLock { s in
            switch outcome.result {
            case .applied:
                s.applied += 1
                s.lastSuccessful = true
                s.lastSuccessTimestamp = Timestamp.now().secondsSince1970
            case .unchanged:
                s.unchanged += 1
            case .refused:
                s.refused += 1
                s.lastSuccessful = false
            }
            for (i, bound) in ReloadStatistics.bounds.enumerated() where outcome.durationSeconds <= bound {
                s.durationCounts[i] += 1
            }
            s.durationCount += 1
            s.durationSum += outcome.durationSeconds
            s.lastAttempt = outcome
        }
    }

    public var snapshot: Snapshot { box.withLock { $0 } }
}
