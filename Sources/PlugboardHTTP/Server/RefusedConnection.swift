#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import PlugboardConcurrency

/// A connection refused over a limit, after its 503 and the shutdown of the server's
/// side: what the client sends is read and dropped for a moment before the close. A close
/// with unread bytes makes the kernel answer with a reset, and a client that had not read
/// the 503 yet would lose it to the reset (RFC 9112 section 9.6: a server that closes
/// "should" linger, reading, after shutting its side). The wait is short and the bytes
/// few, because these connections are over a limit: they must cost almost nothing.
final class RefusedConnection: EventSource {
    static let lingerSeconds = 2.0
    static let maxDrainedBytes = 64 << 10

    private let fd: Int32
    private var id: UInt64?
    private let until: Double
    private var drained = 0
    private let onClose: () -> Void

    private init(fd: Int32, until: Double, onClose: @escaping () -> Void) {
        self.fd = fd
        self.until = until
        self.onClose = onClose
    }

    /// Lingers on `fd` (its answer already written and its side shut), or closes it at
    /// once when the loop cannot watch it; `onClose` runs on the loop once it is closed.
    static func linger(_ fd: Int32, on loop: EventLoop, onClose: @escaping () -> Void) {
        let refused = RefusedConnection(fd: fd, until: MonotonicClock.now() + lingerSeconds, onClose: onClose)
        guard let id = loop.register(fd, events: UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP), source: refused) else {
            close(fd)
            onClose()
            return
        }
        refused.id = id
        // Bytes that came with the connection are read now, not one loop turn later.
        refused.ready(UInt32(PLUGBOARD_EPOLL_IN), loop: loop)
    }

    func ready(_ events: UInt32, loop: EventLoop) {
        while id != nil {
            let n = loop.scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                drained += n
                if drained > Self.maxDrainedBytes { finish(loop) }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            // The client's end (n == 0), an error, or nothing more for now (EAGAIN).
            if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { finish(loop) }
            return
        }
    }

    func tick(_ now: Double, loop: EventLoop) {
        if now > until { finish(loop) }
    }

    /// Deregisters, then closes (the order a connection's close keeps too).
    func finish(_ loop: EventLoop) {
        guard let id else { return }
        self.id = nil
        loop.remove(fd, id: id)
        close(fd)
        onClose()
    }
}
