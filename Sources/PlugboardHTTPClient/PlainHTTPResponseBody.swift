import Dispatch
import PlugboardConcurrency

/// What ``PlainHTTPClient/open(_:streamingSuccess:)`` read: the status and headers, and
/// either the whole body (in `response.body`) or, for a 2xx answer opened for streaming,
/// `body` with its bytes still on the connection (`response.body` empty then).
public struct PlainHTTPOpenedResponse: Sendable {
    public var response: PlainHTTPResponse
    public var body: PlainHTTPResponseBody?
}

/// A response body read from its connection a piece at a time, as the consumer asks: a
/// 1 GiB object passes through in pieces of ``chunkBytes`` and never sits in memory.
///
/// Each read runs on this body's own serial queue, as the client's other blocking socket
/// calls do (overcommitting threads, never Swift's cooperative pool), and cancelling the
/// reading task shuts the socket down, which ends a blocked receive at once.
///
/// The connection goes back to the pool only when the body was read to its end and the
/// answer allows reuse. A body that fails, is cancelled, or is dropped before its end
/// closes its connection: the rest of the body would still arrive on it, so it can carry
/// nothing else.
public final class PlainHTTPResponseBody: Sendable {
    /// The most bytes one piece holds: each costs a hop to the queue and back, so not too
    /// small; the consumer holds at most one at a time, so not too large.
    public static let chunkBytes = 256 * 1024

    /// The Content-Length the answer announced; nil for a chunked or close-delimited body.
    public let length: Int?
    private let key: String
    private let pool: PlainHTTPPool
    private let box: PlainHTTPCancelBox
    private let queue = DispatchQueue(label: "plugboard.http-client.body")
    // Only the queue's jobs touch the state, one after another; the lock makes that
    // visible to ThreadSanitizer and a broken one-reader contract harmless.
    private let state: LockedValueBox<State>
    private let received = LockedValueBox(0)

    private enum State {
        case reading(PlainHTTPResponseReader<PlainHTTPSocketSource>)
        /// While a read has the reader (and so its buffers, uniquely referenced).
        case busy
        case ended
        case failed(PlainHTTPError)
    }

    /// Takes over `reader`, whose head has been read, and its socket, attached to `box`.
    init(_ reader: PlainHTTPResponseReader<PlainHTTPSocketSource>, key: String, pool: PlainHTTPPool,
         box: PlainHTTPCancelBox, length: Int?) {
        self.length = length
        self.key = key
        self.pool = pool
        self.box = box
        state = LockedValueBox(.reading(reader))
    }

    /// The body bytes that came off the connection so far, those of a piece that broke
    /// off included: what an error reports as received.
    public var bytesReceived: Int { received.withLock { $0 } }

    /// The next piece of the body, at most `maxBytes`, or nil after the last one.
    ///
    /// - Throws: ``PlainHTTPError``: `.connectionLost` naming the bytes expected and
    ///   received when the body ends early, `.badResponse` for a malformed chunk,
    ///   `.timedOut`, `.cancelled`. Once it has thrown, it throws the same again.
    public func next(maxBytes: Int = chunkBytes) async throws -> [UInt8]? {
        try await next(maxBytes: maxBytes, whatArrived: false)
    }

    /// The bytes of the body that one read brings, at most `maxBytes` and at least one,
    /// or nil after the last: for a body that streams events without end (etcd's watch),
    /// where waiting for a full piece would hold back each event until more came.
    ///
    /// - Throws: as ``next(maxBytes:)``.
    public func nextArrived(maxBytes: Int = chunkBytes) async throws -> [UInt8]? {
        try await next(maxBytes: maxBytes, whatArrived: true)
    }

    private func next(maxBytes: Int, whatArrived: Bool) async throws -> [UInt8]? {
        let box = self.box
        return try await withTaskCancellationHandler {
            try await PlainHTTPClient.run(on: queue) { [self] () throws(PlainHTTPError) -> [UInt8]? in
                try read(maxBytes, whatArrived: whatArrived)
            }
        } onCancel: {
            box.cancel()
        }
    }

    private func read(_ maxBytes: Int, whatArrived: Bool) throws(PlainHTTPError) -> [UInt8]? {
        try state.withLock { state throws(PlainHTTPError) -> [UInt8]? in
            guard case .reading(var reader) = state else {
                if case .failed(let error) = state { throw error }
                return nil
            }
            state = .busy
            do throws(PlainHTTPError) {
                if box.isCancelled { throw .cancelled }
                defer { received.withLock { $0 = reader.bodyBytesRead } }
                let chunk = try reader.nextBodyChunk(maxBytes: maxBytes, whatArrived: whatArrived)
                guard reader.bodyEnded else {
                    state = .reading(reader)
                    return chunk
                }
                // A cancellation that came with the last bytes has shut the socket down.
                if box.detach(), reader.isReusable { pool.put(reader.source.socket, key) }
                state = .ended
                return chunk
            } catch {
                // Dropping the reader closes the socket: a half-read body stays unread.
                let failure: PlainHTTPError = box.detach() ? error : .cancelled
                state = .failed(failure)
                throw failure
            }
        }
    }
}
