import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC
import Dispatch

/// How many bytes of a body one side may send before the other has taken them: the
/// window that keeps a worker's and the host's memory bounded whatever the body's size.
enum BodyWindow {
    static let bytes = 1 << 20
}

extension ObjectBody {
    /// Sends the whole body as `chunk` frames of `stream`, each once `credit` allows, then
    /// its `end`: both directions of the wire send bodies this way.
    func send(as stream: UInt32, over transport: any FrameTransport, credit: BodyCredit,
              sent: () -> Void = {}) async throws {
        for try await chunk in self {
            var start = 0
            while start < chunk.count {
                let end = Swift.min(chunk.count, start + Frame.maxPayload)
                try await credit.spend(end - start)
                try transport.send(Frame(.chunk, stream: stream, payload: Array(chunk[start..<end])))
                sent()
                start = end
            }
        }
        try transport.send(Frame(.end, stream: stream))
    }
}

/// The sending side's allowance of body bytes (``BodyWindow``): spent as chunks go out,
/// granted back by the receiver's `credit` frames. A sender waits while it is spent.
final class BodyCredit: Sendable {
    private struct State {
        var available = BodyWindow.bytes
        var waiter: CheckedContinuation<Void, any Error>?
        var failure: (any Error)?
    }

    private let state = LockedValueBox(State())

    /// Waits until some allowance is left, then spends `count` (a chunk may overdraw it:
    /// the window bounds memory to one window and one chunk).
    func spend(_ count: Int) async throws {
        try await withCheckedThrowingContinuation { (go: CheckedContinuation<Void, any Error>) in
            let now: Result<Void, any Error>? = state.withLock { s in
                if let failure = s.failure { return .failure(failure) }
                if s.available > 0 {
                    s.available -= count
                    return .success(())
                }
                s.waiter = go
                s.available -= count
                return nil
            }
            if let now { go.resume(with: now) }
        }
    }

    func grant(_ count: Int) {
        let go = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            s.available += count
            guard s.available > 0, let waiter = s.waiter else { return nil }
            s.waiter = nil
            return waiter
        }
        go?.resume()
    }

    /// Wakes a waiting sender with `error`; every later spend throws it.
    func fail(_ error: any Error) {
        let go = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            if s.failure == nil { s.failure = error }
            defer { s.waiter = nil }
            return s.waiter
        }
        go?.resume(throwing: error)
    }
}

/// A body arriving in chunks from the other process: the reader thread appends, one
/// consumer takes them in order; each chunk taken is granted back to the sender through
/// `taken` (its `credit` frame).
final class InboundBody: Sendable {
    private struct State {
        var chunks: [[UInt8]] = []
        var ended = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
    }

    private let state = LockedValueBox(State())
    private let taken: @Sendable (Int) -> Void

    init(taken: @escaping @Sendable (Int) -> Void) {
        self.taken = taken
    }

    func append(_ chunk: [UInt8]) {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !s.ended, s.failure == nil else { return nil }
            guard let waiter = s.waiter else {
                s.chunks.append(chunk)
                return nil
            }
            s.waiter = nil
            return waiter
        }
        if let waiter {
            taken(chunk.count)
            waiter.resume(returning: chunk)
        }
    }

    func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, any Error>? in
            s.ended = true
            defer { s.waiter = nil }
            return s.chunks.isEmpty ? s.waiter : nil
        }
        waiter?.resume(returning: nil)
    }

    func fail(_ error: any Error) {
        let waiter = state.withLock { s -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !s.ended || !s.chunks.isEmpty else { return nil }
            if s.failure == nil { s.failure = error }
            s.chunks.removeAll()
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(throwing: error)
    }

    /// Whether the body has ended or failed and its reader has nothing left to take.
    var isOver: Bool {
        state.withLock { s in s.failure != nil || (s.ended && s.chunks.isEmpty) }
    }

    /// The next chunk, nil at the body's end.
    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { (go: CheckedContinuation<[UInt8]?, any Error>) in
            let now: Result<[UInt8]?, any Error>? = state.withLock { s in
                if !s.chunks.isEmpty { return .success(s.chunks.removeFirst()) }
                if let failure = s.failure { return .failure(failure) }
                if s.ended { return .success(nil) }
                s.waiter = go
                return nil
            }
            if let now {
                if case .success(let chunk?) = now { taken(chunk.count) }
                go.resume(with: now)
            }
        }
    }
}

/// The one reference a get's reader holds to its ``InboundBody``: dropped before the body's
/// end, it tells the connection (``WorkerConnection/Reply/objectBody(length:)``).
final class BodyLease: Sendable {
    private let body: InboundBody
    private let abandoned: @Sendable () -> Void

    init(_ body: InboundBody, abandoned: @escaping @Sendable () -> Void) {
        self.body = body
        self.abandoned = abandoned
    }

    func next() async throws -> [UInt8]? { try await body.next() }

    deinit {
        if !body.isOver { abandoned() }
    }
}

/// How a wire's reader thread sends (an at-once answer, a credit, a pong). On a wire where
/// both sides serve calls (an isolated layer's), through a queue of its own: a reader that
/// waited on a full buffer while the other side's reader waited on this side's would hold
/// both for good. Elsewhere directly, from the reader, as fast as it goes. Frames of one
/// stream keep their order either way.
final class ReaderOutbox: Sendable {
    private let transport: any FrameTransport
    private let queue: DispatchQueue?

    init(transport: any FrameTransport, queued: Bool) {
        self.transport = transport
        self.queue = queued ? DispatchQueue(label: "plugboard.worker-wire.outbox") : nil
    }

    func send(_ frame: Frame) {
        send([frame])
    }

    /// Sends `frames` in order, until one cannot be (the wire ended).
    func send(_ frames: [Frame]) {
        let transport = self.transport
        guard let queue else {
            for frame in frames { do { try transport.send(frame) } catch { return } }
            return
        }
        queue.async {
            for frame in frames { do { try transport.send(frame) } catch { return } }
        }
    }

    /// A `credit` frame granting `count` bytes of `stream`'s body.
    func credit(_ count: Int, stream: UInt32) {
        var w = WireWriter(capacity: 4)
        w.u32(UInt32(count))
        send(Frame(.credit, stream: stream, payload: w.bytes))
    }
}
