import PlugboardAPI

/// A response body produced while it is sent: exactly `length` bytes from `next`, which
/// returns nil at the end. The server asks for the next chunk only when the socket has
/// taken the previous ones (backpressure), so a slow client slows the producer instead of
/// filling memory. A producer that throws, or yields more or fewer bytes than `length`,
/// ends the connection: the head already promised the length.
///
/// A stream made from a storage body that is a region of an open file (``file``) is not
/// read at all: the connection sends the region with `sendfile` from its loop, so the
/// bytes never enter user space and a client that stops reading holds only its socket's
/// kernel buffer.
public struct ResponseStream: Sendable {
    public let length: Int
    public let next: @Sendable () async throws -> [UInt8]?
    /// The file region the connection sends instead of calling ``next``; its length is
    /// ``length``.
    public let file: ObjectFileRegion?

    public init(length: Int, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.length = length
        self.next = next
        file = nil
    }

    /// A storage body sent as it is read, or as its file region when it has one of the
    /// length the head announces: what both APIs answer a large GET with.
    public init(length: Int, body: ObjectBody) {
        let chunks = Chunks(body)
        self.length = length
        next = { try await chunks.next() }
        file = body.fileRegion.flatMap { $0.length == length ? $0 : nil }
    }

    /// The body's iterator behind the `@Sendable` closure the writer calls.
    ///
    /// `@unchecked Sendable`: `iterator` is used by the one task writing the answer, never
    /// by two calls at once (the writer awaits each chunk before it asks for the next).
    private final class Chunks: @unchecked Sendable {
        private var iterator: ObjectBody.Iterator

        init(_ body: ObjectBody) { iterator = body.makeAsyncIterator() }

        func next() async throws -> [UInt8]? { try await iterator.next() }
    }
}
