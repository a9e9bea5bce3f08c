/// An object's data as a sequence of byte chunks, read once: what a streaming `put` takes
/// and a streaming `get` returns, so that neither side has to hold a whole object in memory.
///
/// A body is a source, not a value: iterating it pulls the next chunk from wherever the
/// bytes are (a socket, a file, an array), and the chunks are gone once read. Iterate it
/// from one task; a second iteration continues where the first stopped.
///
/// ```swift
/// let body = ObjectBody(length: size) { try await socket.read(upTo: 256 * 1024) }
/// let info = try await storage.put("backups/db.tar", body: body, contentType: nil,
///                                  metadata: [:], condition: .none)
/// ```
///
/// ``length`` is what the body promises to yield. A consumer that stores it (a backend's
/// `put`) refuses a body that yields fewer or more bytes than its length, because a
/// short body is almost always a dropped connection and must not become a truncated
/// object; ``forEachChunk(upTo:_:)`` and ``collect(upTo:)`` do that check for it.
public struct ObjectBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    /// The total number of bytes the body will yield, when known in advance (a
    /// `Content-Length`, a file's size); `nil` for a body whose end only its last chunk
    /// tells (HTTP chunked transfer coding).
    public let length: Int?
    private let next: @Sendable () async throws -> [UInt8]?

    /// The open file region the body's bytes are, when the storage handed one over
    /// (PlugboardAPI 1.7): the server then sends the region with `sendfile(2)` instead of
    /// reading the chunks, so a slow client pins no copy of them. A consumer uses either
    /// the region or the chunks, never both; iterating a body with a region still yields
    /// the region's bytes. `nil` for every other body, and for any body a layer makes
    /// from this one (``mapChunks(_:)``), whose bytes are no longer the file's.
    public let fileRegion: ObjectFileRegion?

    /// The largest body that ``collect(upTo:)`` gathers for the default streaming `put`
    /// of a backend that only implements the whole-object one: 5 GiB, the largest single
    /// PUT that S3 accepts, so no backend is asked to hold more in one piece.
    public static let wholeObjectLimit = 5 * 1024 * 1024 * 1024

    /// A body whose chunks come from `next`, which returns `nil` at the end.
    ///
    /// - Parameters:
    ///   - length: The number of bytes `next` will yield in all, or `nil` when unknown.
    ///   - next: Returns the next chunk, `nil` after the last one; may throw (a connection
    ///     that broke), and the consumer then stores nothing. Called from one task at a
    ///     time.
    public init(length: Int?, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.length = length
        self.next = next
        fileRegion = nil
    }

    /// A body that is `region` of an open file, whose chunks, for a consumer that
    /// iterates it, come from `next` (a storage's own reader of the same bytes: one that
    /// never waits for a disk on the caller's thread, say); its length is the region's
    /// (PlugboardAPI 1.7).
    ///
    /// - Parameters:
    ///   - region: The file region the server sends as it is; the body keeps it alive.
    ///   - next: Returns the region's bytes chunk by chunk, `nil` after the last one.
    public init(_ region: ObjectFileRegion, next: @escaping @Sendable () async throws -> [UInt8]?) {
        length = region.length
        self.next = next
        fileRegion = region
    }

    /// A body that yields `bytes` as one chunk; its length is `bytes.count`.
    public init(_ bytes: [UInt8]) {
        let remaining = BodyBox<[UInt8]?>(bytes)
        self.init(length: bytes.count) { remaining.take(nil) }
    }

    /// A body that yields the chunks of `chunks`, an async sequence of byte arrays such as
    /// an `AsyncThrowingStream<[UInt8], any Error>`.
    ///
    /// The sequence is iterated once, from one task at a time, as the body is read.
    public init<S: AsyncSequence & Sendable>(length: Int?, _ chunks: S) where S.Element == [UInt8] {
        let iterator = IteratorBox(chunks.makeAsyncIterator())
        self.init(length: length) { try await iterator.next() }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(next: next)
    }

    /// Reads the body chunk by chunk; what iterating it yields.
    ///
    /// Sendable (PlugboardAPI 1.6): it holds nothing but the body's `@Sendable` source,
    /// so a wrapper may take it into the `next` closure of the body it hands on; the body
    /// is still read from one task at a time.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        fileprivate let next: @Sendable () async throws -> [UInt8]?

        public mutating func next() async throws -> [UInt8]? {
            try await next()
        }
    }

    /// Reads the whole body, passing each non-empty chunk to `handle` as it arrives, and
    /// checks it against ``length`` and `limit` on the way: the loop every consumer that
    /// stores a body needs, so that all of them refuse the same bodies.
    ///
    /// Refuses before reading anything when ``length`` exceeds `limit`, and as soon as the
    /// bytes read exceed ``length`` or `limit`; a body that ends short of ``length`` is
    /// refused at its end. Checks for cancellation before each chunk, so that a cancelled
    /// consumer stops reading.
    ///
    /// - Parameters:
    ///   - limit: The most bytes to accept.
    ///   - handle: Called with each chunk, in order; what it throws ends the loop.
    /// - Returns: The number of bytes read, which equals ``length`` when it is known.
    /// - Throws: `storage.invalid_argument` for a body over `limit`, or one that yields
    ///   more or fewer bytes than ``length``; whatever the body or `handle` throws,
    ///   unchanged; `CancellationError`.
    @discardableResult
    public func forEachChunk(upTo limit: Int, _ handle: ([UInt8]) async throws -> Void) async throws -> Int {
        if let length {
            guard length >= 0 else {
                throw PlugboardError(
                    .storageInvalidArgument, "invalid body length \(length)",
                    detail: "Expected a length of 0 or more bytes, or nil when unknown, found \(length).",
                    hint: "Pass the number of bytes the body yields, or nil.")
            }
            guard length <= limit else { throw Self.tooLarge(limit: limit, found: length, announced: true) }
        }
        var total = 0
        while true {
            try Task.checkCancellation()
            guard let chunk = try await next() else { break }
            if chunk.isEmpty { continue }
            total += chunk.count
            if let length, total > length {
                throw PlugboardError(
                    .storageInvalidArgument, "object body longer than its length",
                    detail: "Expected \(length) bytes, found at least \(total).",
                    hint: "Pass the body's true length, or nil when it is not known in advance.")
            }
            guard total <= limit else { throw Self.tooLarge(limit: limit, found: total, announced: false) }
            try await handle(chunk)
        }
        if let length, total != length {
            throw PlugboardError(
                .storageInvalidArgument, "object body ended short of its length",
                detail: "Expected \(length) bytes, found \(total) before the body ended.",
                hint: "The body's source stopped early (a connection closed mid-upload?); send the object again.")
        }
        return total
    }

    /// Reads the whole body into one array, with the checks of ``forEachChunk(upTo:_:)``.
    ///
    /// - Parameter limit: The most bytes to accept.
    /// - Returns: Every byte the body yielded.
    /// - Throws: `storage.invalid_argument` for a body over `limit`, or one that yields
    ///   more or fewer bytes than ``length``; whatever the body throws; `CancellationError`.
    public func collect(upTo limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        let expected = length.flatMap { $0 >= 0 && $0 <= limit ? $0 : nil }
        try await forEachChunk(upTo: limit) { chunk in
            if bytes.isEmpty {
                // The first piece is kept, not copied: a body that arrives whole (a small
                // object read at once) is returned as it came.
                bytes = chunk
                if let expected, expected > chunk.count { bytes.reserveCapacity(expected) }
            } else {
                bytes += chunk
            }
        }
        return bytes
    }

    private static func tooLarge(limit: Int, found: Int, announced: Bool) -> PlugboardError {
        PlugboardError(
            .storageInvalidArgument, "object body too large",
            detail: "Expected at most \(limit) bytes, found \(announced ? "a length of " : "at least ")\(found).",
            hint: "Store a smaller object, or use a backend that streams bodies of this size.")
    }
}

/// A value handed out once, under a lock: the bytes of ``ObjectBody/init(_:)``.
///
/// `@unchecked Sendable`: `value` is only read or written with `lock` held.
private final class BodyBox<Value>: @unchecked Sendable {
    private let lock = PThreadMutex()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// The value, leaving `replacement` in its place.
    func take(_ replacement: Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        let taken = value
        value = replacement
        return taken
    }
}

/// The iterator of the sequence behind ``ObjectBody/init(length:_:)``, kept where the
/// body's `@Sendable` closure can reach it.
///
/// `@unchecked Sendable`: an ``ObjectBody`` is read from one task at a time (its
/// documented contract, as for any async iterator), so `iterator` is never used by two
/// threads at once; the calls are ordered by the awaits of that one reader.
private final class IteratorBox<Base: AsyncIteratorProtocol>: @unchecked Sendable where Base.Element == [UInt8] {
    private var iterator: Base

    init(_ iterator: Base) { self.iterator = iterator }

    func next() async throws -> [UInt8]? {
        try await iterator.next()
    }
}
