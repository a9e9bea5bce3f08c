/// Carries ``Frame``s between the host and one worker child, in both directions.
///
/// One thread receives (the connection's reader); any thread may send. A transport that
/// fails (the peer died, a frame it cannot read) reports it as ``IPCError`` and is then
/// closed for good: a connection is never resumed, a new child gets a new transport.
public protocol FrameTransport: AnyObject, Sendable {
    /// Sends `frame` whole; safe from any thread. Waits only while the peer's buffer is full.
    /// The frame's descriptor, if any, is duplicated for the peer and stays the caller's.
    func send(_ frame: Frame) throws(IPCError)
    /// The next frame, waiting for it; nil once the peer has ended the connection.
    /// Called from one thread at a time.
    func receive() throws(IPCError) -> Frame?
    /// Ends the connection both ways and wakes a waiting ``receive()``; idempotent.
    func close()
}
