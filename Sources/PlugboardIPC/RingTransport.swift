/// Frames through shared memory: a ring each way in one `memfd` mapping, a futex to wake a
/// reader that sleeps, and a socket beside it for descriptors and for the peer's end.
///
/// Not built yet: both ends refuse until it is, and the socket transport serves.
public final class RingTransport: FrameTransport, Sendable {
    public static func pair() throws(IPCError) -> (RingTransport, child: [Int32]) {
        throw .malformed("the ring transport is not available in this build; use the socket transport")
    }

    public init(attaching descriptors: [Int32]) throws(IPCError) {
        throw .malformed("the ring transport is not available in this build; use the socket transport")
    }

    public func send(_ frame: Frame) throws(IPCError) { throw .closed }
    public func receive() throws(IPCError) -> Frame? { nil }
    public func close() {}
}
