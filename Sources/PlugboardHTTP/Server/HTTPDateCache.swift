import PlugboardAPI

/// The `Date` header's text, formatted once per second rather than once per response.
/// One per event loop, used on its thread only (``EventLoop/httpDate``): no lock, which a
/// cache shared by the loops took for every answer.
struct HTTPDateCache {
    private var second: Int64 = -1
    private var text = ""

    mutating func current() -> String {
        let now = Timestamp.now()
        if now.seconds != second {
            second = now.seconds
            text = Timestamp(secondsSince1970: now.seconds).httpDate
        }
        return text
    }
}
