import PlugboardAPI
import PlugboardConcurrency

/// The last timestamp formatted, and its two texts (HTTP date and ISO 8601): a hot object
/// is read again and again with the same `lastModified`, and formatting both dates showed
/// in the benchmark profile of both APIs. One per answer site, so that each keeps its own
/// hot object.
public final class TimestampTexts: Sendable {
    private let last = LockedValueBox<(Timestamp, String, String)?>(nil)

    public init() {}

    public func text(of timestamp: Timestamp) -> (http: String, iso: String) {
        if let hit = last.withLock({ $0 }), hit.0 == timestamp { return (hit.1, hit.2) }
        let texts = (timestamp.httpDate, timestamp.iso8601)
        last.withLock { $0 = (timestamp, texts.0, texts.1) }
        return texts
    }
}
