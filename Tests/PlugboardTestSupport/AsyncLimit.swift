#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency

/// At most `limit` holders at once; the others wait suspended, holding no thread.
///
/// The CLI tests' children are waited for on threads of their own (``OwnThread``), so
/// nothing bounded how many ran: all ~130 started together on two cores, and every other
/// test in the process (in-memory ones too) waited 36 s for the CPU. While they blocked
/// the pool, its two threads were the bound; this keeps that bound without blocking it.
public final class AsyncLimit: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: LockedValueBox<State>

    public init(_ limit: Int) {
        state = LockedValueBox(State(available: max(1, limit)))
    }

    /// One per core: what the machine can run at once.
    public static func perCore() -> AsyncLimit {
        AsyncLimit(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// Runs `body` once a place is free, and frees it after.
    public func run<T: Sendable>(_ body: () async -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { s in
                guard s.available > 0 else {
                    s.waiters.append(continuation)
                    return false
                }
                s.available -= 1
                return true
            }
            if admitted { continuation.resume() }
        }
        defer { release() }
        return await body()
    }

    private func release() {
        // The place goes straight to the longest waiter.
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
