import Dispatch

/// Runs blocking work (file I/O and its `fsync`, reading and hashing a plugin, `dlopen`)
/// off Swift's cooperative pool, which has one thread per core: work that blocks a pool
/// thread stalls every task of the process queued behind it.
///
/// On Linux the pool's threads are Dispatch's default global threads, and a custom
/// *concurrent* queue runs on those same threads, at most one per core: it would block
/// the pool and cap the blocking work at the core count. A *serial* queue runs on
/// Dispatch's overcommit threads, which are started as needed, so each job goes to one of
/// a set of serial lanes, the least busy one.
public enum BlockingWork {
    /// How many jobs can block at once before one waits behind another.
    public static let laneCount = 64

    private static let lanes: [DispatchQueue] = (0..<laneCount).map { DispatchQueue(label: "plugboard.blocking.\($0)") }
    private static let busy = LockedValueBox([Int](repeating: 0, count: laneCount))

    /// Runs `body` on a blocking lane and returns what it returns or throws.
    public static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let lane = busy.withLock { counts -> Int in
            var best = 0
            for i in counts.indices where counts[i] < counts[best] { best = i }
            counts[best] += 1
            return best
        }
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            lanes[lane].async {
                let outcome = Result { () throws(E) -> T in try body() }
                busy.withLock { $0[lane] -= 1 }
                continuation.resume(returning: outcome)
            }
        }
        return try result.get()
    }
}
