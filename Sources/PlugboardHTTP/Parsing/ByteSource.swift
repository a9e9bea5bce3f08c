/// What the reader is waiting for, so that a source can apply the matching deadline.
public enum ReadPhase: Sendable {
    /// Between requests on a kept-alive connection: nothing has arrived yet.
    case idle
    /// Inside a request line or header section.
    case head
    /// Inside a body.
    case body
}

/// Where a ``RequestReader`` gets bytes: a socket in the server, arrays in tests.
public protocol ByteSource {
    /// Reads at most `buffer.count` bytes into `buffer` and returns how many; 0 when the
    /// peer has finished sending (or, in the idle phase, when the connection should just
    /// be closed). Throws when the peer is too slow for the phase (408).
    mutating func read(into buffer: UnsafeMutableRawBufferPointer, phase: ReadPhase) throws(HTTPError) -> Int
}
