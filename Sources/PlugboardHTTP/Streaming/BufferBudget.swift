import Synchronization

/// The bytes of request and response bodies the server holds in memory at once, all
/// connections together (`--max-buffered-bytes`). Each connection's own buffers are small
/// (``BodyChannel/highWater``, ``Connection/outboundHighWater``); this bounds their sum, so
/// that many connections each at its bound cannot add up to an out-of-memory kill. When
/// it is spent, a new request with a body is answered 503 with `Retry-After`, bodies in
/// progress wait (their connections stop reading until bytes are given back), and a
/// streamed answer's producer waits until its connection's queue is empty. A file body
/// sent with `sendfile` never enters the queue, so it takes nothing from the budget.
final class BufferBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    func take(_ bytes: Int) { used.add(bytes, ordering: .relaxed) }
    func give(_ bytes: Int) { used.subtract(bytes, ordering: .relaxed) }
    var inUse: Int { used.load(ordering: .relaxed) }
    var isSpent: Bool { inUse >= limit }
    /// Whether the budget is spent by others than the caller, who holds `own` bytes of it.
    func isSpent(excluding own: Int) -> Bool { inUse - own >= limit }
}
