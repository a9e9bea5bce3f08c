import PlugboardAPI
import PlugboardConcurrency
import PlugboardJSON

/// A bounded ring of recent hot-swap events, each with a sequence number, so that a
/// client polling `GET /v1/admin/events?since=SEQ` sees each once and can tell when it
/// missed some (the first sequence it gets is above `since + 1`).
public final class HotSwapEvents: Sendable {
    public struct Event: Sendable {
        public var sequence: UInt64
        public var time: Timestamp
        /// `reload_applied`, `reload_unchanged`, `reload_refused`, `plugin_loaded`,
        /// `plugin_retired`, `drained`, `drain_forced`.
        public var kind: String
        public var plugin: String?
        public var generation: UInt64
        public var error: PlugboardError?
        public var message: String?

        public var json: JSONOutput {
            .object([("sequence", .int(Int64(sequence))), ("time", .string(time.iso8601)), ("kind", .string(kind)),
                     ("plugin", .string(plugin)), ("generation", .int(Int64(generation))),
                     ("message", .string(message)), ("error", JSONOutput.errorBody(error))])
        }
    }

    private let ring: LockedValueBox<(events: [Event], next: UInt64)>
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = capacity
        ring = LockedValueBox(([], 1))
    }

    /// Appends an event; the oldest goes when the ring is full.
    public func emit(_ kind: String, plugin: String? = nil, generation: UInt64, error: PlugboardError? = nil,
                     message: String? = nil) {
        ring.withLock { ring in
            ring.events.append(Event(sequence: ring.next, time: .now(), kind: kind, plugin: plugin,
                                     generation: generation, error: error, message: message))
            ring.next += 1
            if ring.events.count > capacity { ring.events.removeFirst(ring.events.count - capacity) }
        }
    }

    /// The events with a sequence number above `since`, oldest first.
    public func since(_ since: UInt64) -> [Event] {
        ring.withLock { ring in ring.events.filter { $0.sequence > since } }
    }

    /// The sequence number the next event will get.
    public var nextSequence: UInt64 { ring.withLock { $0.next } }
}
