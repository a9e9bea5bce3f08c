/// The transports a worker's wire can use, made on the host's side and attached on the
/// child's: the host makes a pair, hands the child's descriptors over at fixed numbers
/// (3, 4, ...), and the child attaches to them under the same kind.
public enum TransportKind: String, Sendable, CaseIterable {
    /// ``SocketTransport``: one `sendmsg` and one `recvmsg` a frame.
    case socket
    /// A shared-memory ring each way, with a socket beside it for descriptors.
    case ring
}

public enum Transports {
    /// A connected transport for this process and the descriptors the child needs, in the
    /// order it must find them (close-on-exec: the spawner hands them over with dup2).
    public static func make(_ kind: TransportKind) throws(IPCError) -> (host: any FrameTransport, child: [Int32]) {
        switch kind {
        case .socket:
            let (host, child) = try SocketTransport.pair()
            return (host, [child])
        case .ring:
            let (host, child) = try RingTransport.pair()
            return (host, child)
        }
    }

    /// The child's end, over the descriptors ``make(_:)`` gave it, which it now owns.
    public static func attach(_ kind: TransportKind, descriptors: [Int32]) throws(IPCError) -> any FrameTransport {
        switch kind {
        case .socket:
            guard descriptors.count == 1 else { throw .malformed("expected 1 descriptor for a socket transport, found \(descriptors.count)") }
            return SocketTransport(socket: descriptors[0])
        case .ring:
            return try RingTransport(attaching: descriptors)
        }
    }
}
