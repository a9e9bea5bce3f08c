import PlugboardAPI

/// Wake-ups for a loop that reads the store again each time: one after any change under
/// a prefix (the store's watch) and one every `tickSeconds` at least (time-based
/// decisions, and a store whose watch was cut). Coalesced: a burst wakes the loop once.
/// Cancelling the loop's task ends both feeders.
public struct FleetWakeups: Sendable {
    public let stream: AsyncStream<Void>
    private let feeders: [Task<Void, Never>]

    public init(store: any FleetStore, prefixes: [String], tickSeconds: Double) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        var feeders: [Task<Void, Never>] = prefixes.map { prefix in
            Task {
                for await _ in store.changes(prefix: prefix) { continuation.yield() }
            }
        }
        feeders.append(Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(tickSeconds * 1e9))
                continuation.yield()
            }
        })
        self.stream = stream
        self.feeders = feeders
        let all = feeders
        continuation.onTermination = { _ in for feeder in all { feeder.cancel() } }
    }

    /// Ends the feeders (the loop is done).
    public func stop() {
        for feeder in feeders { feeder.cancel() }
    }
}
