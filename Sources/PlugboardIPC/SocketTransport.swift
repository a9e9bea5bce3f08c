#if canImport(Glibc)
import Glibc
#endif
import CPlugboardIPC
import PlugboardConcurrency

/// Frames over a `SOCK_SEQPACKET` Unix socket: one `sendmsg` a frame, one `recvmsg` a
/// frame, its descriptor attached to exactly that message.
///
/// ``close()`` shuts the socket down, which wakes a reader blocked in `recvmsg`; the
/// descriptor itself is closed only when the transport goes away, so that no other
/// thread's new descriptor can take its number while a reader still uses it.
public final class SocketTransport: FrameTransport, @unchecked Sendable {
    // @unchecked: `socket` never changes; the receive buffer is used by the one reader
    // thread the protocol allows (``FrameTransport/receive()``).
    public let socket: Int32
    private var buffer: [UInt8]
    private let shutDown = LockedValueBox(false)

    /// Takes ownership of `socket`, one end of ``pair()``.
    public init(socket: Int32) {
        self.socket = socket
        buffer = [UInt8](repeating: 0, count: Frame.headerBytes + Frame.maxPayload)
    }

    deinit { Glibc.close(socket) }

    /// A connected pair: one end for this process, one for the child (close-on-exec; the
    /// spawner hands it over with dup2).
    public static func pair() throws(IPCError) -> (SocketTransport, child: Int32) {
        var fds: [Int32] = [-1, -1]
        guard plugboard_ipc_socketpair(&fds) == 0 else { throw .system("socketpair") }
        return (SocketTransport(socket: fds[0]), fds[1])
    }

    public func send(_ frame: Frame) throws(IPCError) {
        guard frame.payload.count <= Frame.maxPayload else {
            throw .malformed("expected a payload of at most \(Frame.maxPayload) bytes, found \(frame.payload.count)")
        }
        var head: (UInt8, UInt8, UInt8, UInt8, UInt8) = (frame.kind.rawValue, UInt8(truncatingIfNeeded: frame.stream),
                                                          UInt8(truncatingIfNeeded: frame.stream >> 8),
                                                          UInt8(truncatingIfNeeded: frame.stream >> 16),
                                                          UInt8(truncatingIfNeeded: frame.stream >> 24))
        let sent = withUnsafeBytes(of: &head) { head in
            frame.payload.withUnsafeBytes { body in
                plugboard_ipc_send(socket, head.baseAddress, Frame.headerBytes, body.baseAddress, body.count, frame.descriptor)
            }
        }
        if sent < 0 { throw errno == EPIPE || errno == ECONNRESET ? .closed : .system("sendmsg") }
    }

    public func receive() throws(IPCError) -> Frame? {
        var descriptor: Int32 = -1
        let got = buffer.withUnsafeMutableBytes { plugboard_ipc_receive(socket, $0.baseAddress, $0.count, &descriptor) }
        if got == 0 { return nil }
        if got < 0 {
            if errno == ECONNRESET { return nil }
            throw errno == EMSGSIZE ? .malformed("a message longer than \(buffer.count) bytes") : .system("recvmsg")
        }
        guard got >= Frame.headerBytes else {
            if descriptor >= 0 { Glibc.close(descriptor) }
            throw .malformed("expected at least \(Frame.headerBytes) bytes of header, found \(got)")
        }
        let stream = UInt32(buffer[1]) | UInt32(buffer[2]) << 8 | UInt32(buffer[3]) << 16 | UInt32(buffer[4]) << 24
        return Frame(Frame.Kind(rawValue: buffer[0]), stream: stream, payload: Array(buffer[Frame.headerBytes..<got]),
                     descriptor: descriptor)
    }

    public func close() {
        let first = shutDown.withLock { done -> Bool in defer { done = true }; return !done }
        if first { _ = Glibc.shutdown(socket, Int32(SHUT_RDWR)) }
    }
}
