import Dispatch
import PlugboardConcurrency
import PlugboardHTTPCodec

/// The socket an exchange is using, so that a cancellation arriving at any moment reaches
/// it; detached before the socket is pooled or closed, so it never touches a reused fd.
final class PlainHTTPCancelBox: Sendable {
    private let state = LockedValueBox<(socket: PlainHTTPSocket?, cancelled: Bool)>((nil, false))

    /// False when the task was already cancelled.
    func attach(_ socket: PlainHTTPSocket) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.socket = socket
            return true
        }
    }

    var isCancelled: Bool {
        state.withLock { $0.cancelled }
    }

    /// False when the task was cancelled (and the socket shut down).
    func detach() -> Bool {
        state.withLock { state in
            state.socket = nil
            return !state.cancelled
        }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.socket?.shutdownBothWays()
        }
    }
}
