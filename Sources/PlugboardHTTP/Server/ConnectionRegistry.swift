#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency

/// The open connections: how many (for the limit), which are idle between requests (so
/// a graceful stop can close those at once), and whether the server is stopping.
final class ConnectionRegistry: Sendable {
    private struct State {
        var open: [Int: (fd: Int32, idle: Bool)] = [:]
        var nextID = 0
        var stopping = false
    }
    private let state = LockedValueBox(State())

    /// Registers a connection, or returns nil when `limit` are open or the server stops.
    func add(_ fd: Int32, limit: Int) -> Int? {
        state.withLock { s in
            guard !s.stopping, s.open.count < limit else { return nil }
            s.nextID += 1
            s.open[s.nextID] = (fd: fd, idle: false)
            return s.nextID
        }
    }

    func remove(_ id: Int) {
        state.withLock { s in _ = s.open.removeValue(forKey: id) }
    }

    /// Marks a connection idle (waiting for its next request) or busy. Returns false when
    /// the server is stopping: an idle connection then closes instead of waiting.
    func setIdle(_ id: Int, _ idle: Bool) -> Bool {
        state.withLock { s in
            if idle && s.stopping { return false }
            s.open[id]?.idle = idle
            return true
        }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }
    var openCount: Int { state.withLock { $0.open.count } }

    /// Stops new requests: idle connections are woken (their read returns end of stream)
    /// and close; busy ones finish their request and close.
    func beginStop() {
        state.withLock { s in
            s.stopping = true
            for (_, c) in s.open where c.idle { shutdown(c.fd, Int32(SHUT_RD)) }
        }
    }
}
