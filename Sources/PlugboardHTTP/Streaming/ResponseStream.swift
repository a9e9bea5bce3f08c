/// A response body produced while it is sent: exactly `length` bytes from `next`, which
/// returns nil at the end. The server asks for the next chunk only when the socket has
/// taken the previous ones (backpressure), so a slow client slows the producer instead of
/// filling memory. A producer that throws, or yields more or fewer bytes than `length`,
/// ends the connection: the head already promised the length.
public struct ResponseStream: Sendable {
    public let length: Int
    public let next: @Sendable () async throws -> [UInt8]?

    public init(length: Int, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.length = length
        self.next = next
    }
}
