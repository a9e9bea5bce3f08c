import PlugboardAPI
import PlugboardConcurrency

/// The `Date` header's text, formatted once per second rather than once per response.
final class HTTPDateCache: Sendable {
    private let cached = LockedValueBox<(second: Int64, text: String)>((second: -1, text: ""))

    func current() -> String {
        let now = Timestamp.now()
        return cached.withLock { c in
            if c.second != now.seconds {
                c = (second: now.seconds, text: Timestamp(secondsSince1970: now.seconds).httpDate)
            }
            return c.text
        }
    }
}
