import Dispatch
import PlugboardConcurrency
import PlugboardHTTPCodec

/// Idle keep-alive connections by "host:port", at most `maxIdlePerHost` each. Only
/// connections whose last response was read to its end, without `Connection: close`,
/// come back here.
final class PlainHTTPPool: Sendable {
    let maxIdlePerHost: Int
    // A pthread mutex (LockedValueBox), not Synchronization.Mutex: ThreadSanitizer cannot
    // see Mutex's futex and reports races that are not there (docs/ARCHITECTURE.md, fact 13).
    private let state = LockedValueBox<(idle: [String: [PlainHTTPSocket]], closed: Bool)>(([:], false))

    init(maxIdlePerHost: Int) {
        self.maxIdlePerHost = maxIdlePerHost
    }

    /// The most recently used idle connection to `key` that the server has not closed.
    func take(_ key: String) -> PlainHTTPSocket? {
        while let socket = state.withLock({ $0.idle[key]?.popLast() }) {
            if !socket.hasPendingInput { return socket }
        }
        return nil
    }

    func put(_ socket: PlainHTTPSocket, _ key: String) {
        state.withLock { state in
            guard !state.closed, state.idle[key, default: []].count < maxIdlePerHost else { return }
            state.idle[key, default: []].append(socket)
        }
    }

    func idleCount(_ key: String) -> Int {
        state.withLock { $0.idle[key]?.count ?? 0 }
    }

    func close() {
        // Dropping the sockets closes them.
        state.withLock { state in
            state.closed = true
            state.idle = [:]
        }
    }
}
