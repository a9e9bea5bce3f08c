import PlugboardAPI
import PlugboardConcurrency

/// A request's body as it arrives: an async sequence of decoded chunks, read once. The
/// event loop pushes what it reads; when the reader falls behind by
/// ``BodyChannel/highWater`` bytes the loop stops reading the socket (TCP's window then
/// holds the client back), and starts again once the reader has taken half of it. So a
/// body of any size costs at most a few hundred KiB of memory, whatever the client sends.
///
/// The sequence throws ``HTTPError`` when the body cannot be completed: the client closed
/// or reset the connection, sent it too slowly, or broke the chunked framing.
public struct RequestBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    /// The length the head announced: `Content-Length`, 0 without a body, nil for chunked.
    public let length: Int?
    /// nil for an empty body: most requests have none, and need no channel.
    private let channel: BodyChannel?

    /// A body whose bytes are all here (tests, and bodies already read).
    public init(_ bytes: [UInt8]) {
        length = bytes.count
        guard !bytes.isEmpty else {
            channel = nil
            return
        }
        let channel = BodyChannel(budget: nil)
        _ = channel.push(bytes)
        channel.finish()
        self.channel = channel
    }

    init(length: Int?, channel: BodyChannel) {
        self.length = length
        self.channel = channel
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let channel: BodyChannel?
        public mutating func next() async throws -> [UInt8]? { try await channel?.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }

    /// The whole body, refusing one over `limit` bytes with 413.
    public func collect(upTo limit: Int) async throws -> [UInt8] {
        if let length, length > limit { throw HTTPError.payloadTooLarge(limit: limit, found: "\(length) bytes") }
        var out: [UInt8] = []
        out.reserveCapacity(Swift.min(length ?? 0, 1 << 20))
        for try await chunk in self {
            guard out.count + chunk.count <= limit else {
                throw HTTPError.payloadTooLarge(limit: limit, found: "more than \(limit) bytes")
            }
            out.append(contentsOf: chunk)
        }
        return out
    }
}

/// The hand-over between the event loop (producer) and the request's task (consumer).
final class BodyChannel: Sendable {
    /// The reader may fall this far behind before the loop stops reading the socket.
    static let highWater = 256 << 10

    private struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        var buffered = 0
        var finished = false
        var error: HTTPError?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        /// Set by the loop when it stopped reading for this body; cleared (and `resume`
        /// called) once the reader has taken the buffer below half the high water.
        var paused = false
        var resume: (@Sendable () -> Void)?
    }

    private let state = LockedValueBox(State())
    private let budget: BufferBudget?

    init(budget: BufferBudget?) {
        self.budget = budget
    }

    /// Loop side: hands over a chunk; returns the bytes now waiting for the reader.
    func push(_ chunk: [UInt8]) -> Int {
        budget?.take(chunk.count)
        let (waiter, buffered) = state.withLock { s -> (CheckedContinuation<[UInt8]?, any Error>?, Int) in
            if let w = s.waiter {
                s.waiter = nil
                return (w, s.buffered)
            }
            s.chunks.append(chunk)
            s.buffered += chunk.count
            return (nil, s.buffered)
        }
        if let waiter {
            budget?.give(chunk.count)
            waiter.resume(returning: chunk)
        }
        return buffered
    }

    /// Loop side: the body is complete.
    func finish() { end(nil) }

    /// Loop side: the body cannot be completed.
    func fail(_ error: HTTPError) { end(error) }

    private func end(_ error: HTTPError?) {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !s.finished else { return nil }
            s.finished = true
            s.error = error
            s.resume = nil
            defer { s.waiter = nil }
            return s.waiter
        }
        guard let waiter else { return }
        if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
    }

    /// Loop side: reading stops for this body; `resume` is called (from the reader's
    /// thread) once it has caught up. Returns false, and keeps nothing, when the reader
    /// has already taken every chunk: it would wait for bytes that no read brings, and
    /// the loop would wait for a reader that never takes another chunk.
    func pause(resume: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { s in
            guard s.head < s.chunks.count, !s.finished else { return false }
            s.paused = true
            s.resume = resume
            return true
        }
    }

    /// Bytes left unread when the request ended (the loop gives them back to the budget).
    func discard() {
        let dropped = state.withLock { s -> Int in
            let n = s.buffered
            s.chunks = []
            s.head = 0
            s.buffered = 0
            return n
        }
        budget?.give(dropped)
    }

    /// Reader side.
    func next() async throws -> [UInt8]? {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            enum Taken { case chunk([UInt8], resume: (@Sendable () -> Void)?), end, failed(HTTPError), wait }
            let taken = state.withLock { s -> Taken in
                if s.head < s.chunks.count {
                    // The slot lets go of the chunk at once: a reader that keeps pace never
                    // empties the queue, and the chunks it has read must not pile up in it.
                    let chunk = s.chunks[s.head]
                    s.chunks[s.head] = []
                    s.head += 1
                    if s.head == s.chunks.count {
                        s.chunks.removeAll(keepingCapacity: true)
                        s.head = 0
                    } else if s.head >= 64 {
                        s.chunks.removeFirst(s.head)
                        s.head = 0
                    }
                    s.buffered -= chunk.count
                    var resume: (@Sendable () -> Void)?
                    if s.paused && s.buffered <= Self.highWater / 2 {
                        s.paused = false
                        resume = s.resume
                        s.resume = nil
                    }
                    return .chunk(chunk, resume: resume)
                }
                if s.finished { return s.error.map { .failed($0) } ?? .end }
                s.waiter = continuation
                return .wait
            }
            switch taken {
            case .chunk(let chunk, let resume):
                budget?.give(chunk.count)
                resume?()
                continuation.resume(returning: chunk)
            case .end: continuation.resume(returning: nil)
            case .failed(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }
}
