import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC
#if canImport(Glibc)
import Glibc
#endif

/// The calling side of the worker protocol: the host's end of one worker child's wire,
/// whose calls go out as streams, one reader thread taking every frame that comes back and
/// handing it to the call it belongs to; and, with the roles swapped, an isolated layer's
/// calls from its worker to the storage it wraps in the host (``HostStorage``), whose
/// frames the worker's reader hands over (``receive(_:)``).
///
/// A host's connection to a layer's worker serves that worker's calls too (`server`):
/// the frames of streams the worker opened (``StreamOrigin``) go there.
///
/// When the wire ends (the child died, or broke the protocol), every call in flight fails
/// with ``WorkerLost``, which says whether the call may be sent again, and `ended` is told
/// once, with why.
final class WorkerConnection: Sendable {
    /// A call in flight: where its answer goes, its body either way, when it last moved.
    final class Pending: Sendable {
        let call: WorkerCall
        let answer = LockedValueBox<CheckedContinuation<Frame, any Error>?>(nil)
        /// A get's body arriving in chunks.
        let body: InboundBody?
        /// A put's body going out: spent as chunks are sent, granted by the worker.
        let credit: BodyCredit?
        /// Monotonic seconds of the call's start or its last frame: a call that does not
        /// move for the plugin's call timeout means the worker hangs.
        let lastMoved: LockedValueBox<Double>
        /// A put's body's own failure (its client went away): the caller gets this error
        /// back, not the worker's rendition of it.
        let bodyFailure = LockedValueBox<(any Error)?>(nil)

        init(call: WorkerCall, body: InboundBody?, credit: BodyCredit?, lastMoved: LockedValueBox<Double>) {
            self.call = call
            self.body = body
            self.credit = credit
            self.lastMoved = lastMoved
        }
    }

    /// Why a wire ended.
    enum Ending: Sendable {
        /// The peer closed it (the child exited or died).
        case closed
        /// The peer sent what the protocol does not allow.
        case protocolViolation(String)
        /// This side closed it (a stop, or the supervisor killing a hung child).
        case closedHere
    }

    let transport: any FrameTransport
    /// Set on the streams this side opens (``StreamOrigin``).
    private let origin: UInt32
    /// Serves the other side's calls on the same wire, if it may make any.
    private let server: WorkerServer?
    /// What the reader thread sends (``ReaderOutbox``).
    private let outbox: ReaderOutbox
    private let pending = LockedValueBox<[UInt32: Pending]>([:])
    private let nextStream = LockedValueBox<UInt32>(1)
    private let endedBox = LockedValueBox<Ending?>(nil)
    private let onEnd: @Sendable (Ending) -> Void
    private let pong = LockedValueBox<(sent: Double, answered: Double)>((0, 0))
    private let readyBox = LockedValueBox<CheckedContinuation<Frame?, Never>?>(nil)
    private let firstFrame = LockedValueBox<Frame??>(nil)
    /// The calls in flight when the wire ended, for the crash report.
    private let lostCalls = LockedValueBox<[WorkerCall]>([])
    /// Calls the worker answered: one that served before it died is no crash loop.
    private let answeredBox = LockedValueBox(0)
    var answered: Int { answeredBox.withLock { $0 } }

    /// - Parameters:
    ///   - origin: ``StreamOrigin/worker`` for a worker's calls to the host; 0 for the host's.
    ///   - server: for the host's end of a layer's wire: what serves the worker's calls.
    init(transport: any FrameTransport, origin: UInt32 = 0, server: WorkerServer? = nil,
         onEnd: @escaping @Sendable (Ending) -> Void) {
        self.transport = transport
        self.origin = origin
        self.server = server
        self.outbox = ReaderOutbox(transport: transport, queued: server != nil || origin != 0)
        self.onEnd = onEnd
    }

    /// Starts the reader thread. False when no thread could be made.
    func start() -> Bool {
        Threads.spawn { [self] in readLoop() }
    }

    var hasEnded: Bool { endedBox.withLock { $0 != nil } }

    // MARK: The worker's first frame

    /// The worker's `ready` frame, or nil when the wire ended first.
    func ready() async -> Frame? {
        await withCheckedContinuation { (go: CheckedContinuation<Frame?, Never>) in
            let now: Frame?? = firstFrame.withLock { frame in
                if let frame { return frame }
                readyBox.withLock { $0 = go }
                return nil
            }
            if let now { go.resume(returning: now) }
        }
    }

    private func deliverFirst(_ frame: Frame?) {
        let waiter = firstFrame.withLock { stored -> CheckedContinuation<Frame?, Never>? in
            guard stored == nil else { return nil }
            stored = .some(frame)
            return readyBox.withLock { w in defer { w = nil }; return w }
        }
        waiter?.resume(returning: frame)
    }

    // MARK: Calls

    /// Sends `call` and waits for its answer frame. For a put, `body` is sent as the
    /// worker takes it. A get's body (when not handed over as a descriptor) is in
    /// `Reply.body`.
    func call(_ call: WorkerCall, service: String?, body: ObjectBody? = nil) async throws -> Reply {
        let isGet: Bool
        if case .get = call { isGet = true } else { isGet = false }
        let stream = nextStream.withLock { n -> UInt32 in defer { n = n == ~StreamOrigin.worker ? 1 : n + 1 }; return origin | n }
        let moved = LockedValueBox(MonotonicClock.now())
        let inbound = isGet ? InboundBody(taken: { [outbox] count in
            // The host's reader took a chunk: the call moves, whatever the worker does.
            moved.withLock { $0 = MonotonicClock.now() }
            outbox.credit(count, stream: stream)
        }) : nil
        let entry = Pending(call: call, body: inbound, credit: body == nil ? nil : BodyCredit(), lastMoved: moved)
        if let lost = endedBox.withLock({ $0 }) { throw WorkerLost(call: call, ending: lost, sent: false) }
        pending.withLock { $0[stream] = entry }
        return try await withTaskCancellationHandler {
            let frame: Frame = try await withCheckedThrowingContinuation { go in
                entry.answer.withLock { $0 = go }
                // Cancelled before the continuation was stored: the cancellation found no
                // one to wake, so the call ends here, unsent.
                if pending.withLock({ $0[stream] }) !== entry {
                    entry.answer.withLock { w in defer { w = nil }; return w }?.resume(throwing: CancellationError())
                    return
                }
                do throws(IPCError) {
                    try transport.send(Frame(.call, stream: stream, payload: call.encoded(service: service)))
                } catch {
                    fail(stream, WorkerLost(call: call, ending: .closed, sent: false))
                    return
                }
                if let body, let credit = entry.credit {
                    Task { await self.send(body, stream: stream, credit: credit, entry: entry) }
                }
                // The wire may have ended between the check above and now.
                if let lost = endedBox.withLock({ $0 }) { fail(stream, WorkerLost(call: call, ending: lost, sent: true)) }
            }
            return Reply(frame: frame, stream: stream, body: inbound, connection: self)
        } onCancel: {
            try? transport.send(Frame(.cancel, stream: stream))
            fail(stream, CancellationError())
        }
    }

    struct Reply: Sendable {
        let frame: Frame
        let stream: UInt32
        let body: InboundBody?
        let connection: WorkerConnection

        /// A get's body for its reader. When the reader drops it before its end (its client
        /// went away), the worker is told to stop sending: nothing waits for a window nobody
        /// will open, and the call does not look hung.
        /// `lost` turns the worker's end mid-body into the caller's error: a body's reader
        /// knows storage errors, not the wire's.
        func objectBody(length: Int, lost: @escaping @Sendable (WorkerLost) -> any Error) -> ObjectBody? {
            guard let body else { return nil }
            let (connection, stream) = (connection, stream)
            let lease = BodyLease(body) { connection.abandon(stream) }
            return ObjectBody(length: length) {
                do {
                    return try await lease.next()
                } catch let error as WorkerLost {
                    throw lost(error)
                }
            }
        }
    }

    /// Ends a call whose result nobody wants any more.
    func abandon(_ stream: UInt32) {
        guard pending.withLock({ $0[stream] }) != nil else { return }
        try? transport.send(Frame(.cancel, stream: stream))
        fail(stream, CancellationError())
    }

    /// A put's body, in frames the worker takes as fast as it stores them.
    private func send(_ body: ObjectBody, stream: UInt32, credit: BodyCredit, entry: Pending) async {
        do {
            try await body.send(as: stream, over: transport, credit: credit) {
                // The host's body moves: a slow upload is not a hung worker.
                entry.lastMoved.withLock { $0 = MonotonicClock.now() }
            }
        } catch is WorkerLost {
            // The worker went away; the call fails with it from the reader.
        } catch is IPCError {
            // The wire ended; the call fails with WorkerLost from the reader.
        } catch {
            // The body's own failure (a client gone mid-upload): the worker's storage sees
            // its body throw and stores nothing; the caller gets this error back.
            entry.bodyFailure.withLock { $0 = error }
            try? transport.send(Frame(.failure, stream: stream, payload: WorkerAnswer.failure(error)))
        }
    }

    private func fail(_ stream: UInt32, _ error: any Error) {
        guard let entry = pending.withLock({ $0.removeValue(forKey: stream) }) else { return }
        let waiter = entry.answer.withLock { w in defer { w = nil }; return w }
        waiter?.resume(throwing: error)
        entry.body?.fail(error)
        entry.credit?.fail(error)
    }

    // MARK: Liveness

    /// Sends a ping; the reader records its pong.
    func ping() {
        pong.withLock { $0.sent = MonotonicClock.now() }
        try? transport.send(Frame(.ping))
    }

    /// Seconds since the last ping that has no pong yet; 0 when every ping was answered.
    var unansweredFor: Double {
        pong.withLock { p in p.answered >= p.sent ? 0 : MonotonicClock.now() - p.sent }
    }

    /// The call that has not moved for the longest, and for how long. None while this
    /// side serves a call of the worker's: the worker waits for it, it does not hang.
    func stalest() -> (call: WorkerCall, seconds: Double)? {
        if server?.isServing == true { return nil }
        let now = MonotonicClock.now()
        return pending.withLock { all in
            all.values.map { ($0.call, now - $0.lastMoved.withLock { $0 }) }.max { $0.1 < $1.1 }
        }
    }

    /// The calls in flight, or those in flight when the wire ended: a crash report's story.
    var inFlight: [WorkerCall] {
        hasEnded ? lostCalls.withLock { $0 } : pending.withLock { $0.values.map(\.call) }
    }

    /// Ends the wire from this side: calls in flight fail with ``WorkerLost``.
    func close() {
        end(.closedHere)
    }

    func send(_ frame: Frame) throws(IPCError) {
        try transport.send(frame)
    }

    // MARK: The reader

    /// A frame of this side's calls, read by the thread that owns the wire (a worker's
    /// ``WorkerServer``); one that breaks the protocol ends the wire.
    func receive(_ frame: Frame) {
        if let violation = dispatch(frame) {
            if frame.descriptor >= 0 { Glibc.close(frame.descriptor) }
            end(.protocolViolation(violation))
        }
    }

    /// The wire ended under the thread that owns it: this side's calls in flight fail.
    func wireEnded() {
        end(.closed)
    }

    private func readLoop() {
        while true {
            let frame: Frame?
            do throws(IPCError) {
                frame = try transport.receive()
            } catch {
                end(.protocolViolation(error.description))
                return
            }
            guard let frame else {
                end(.closed)
                return
            }
            if let violation = dispatch(frame) {
                if frame.descriptor >= 0 { Glibc.close(frame.descriptor) }
                end(.protocolViolation(violation))
                return
            }
        }
    }

    /// Hands `frame` to its call; a reason when it breaks the protocol.
    private func dispatch(_ frame: Frame) -> String? {
        if StreamOrigin.isWorkers(frame.stream) != (origin != 0) {
            // A call of the other side's, to serve, which only a layer's worker makes.
            guard let server else {
                return "the worker sent a \(frame.kind) frame for its own call \(frame.stream), but its plugin wraps no storage the host could serve"
            }
            server.handle(frame)
            return nil
        }
        switch frame.kind {
        case .ready:
            deliverFirst(frame)
            return nil
        case .pong:
            pong.withLock { $0.answered = MonotonicClock.now() }
            return nil
        case .answer, .failure, .chunk, .end, .credit:
            break
        default:
            return "the worker sent a \(frame.kind) frame, which only the host sends"
        }
        // A frame for a call this side gave up on (cancelled) is dropped.
        guard let entry = pending.withLock({ $0[frame.stream] }) else {
            if frame.descriptor >= 0 { Glibc.close(frame.descriptor) }
            return nil
        }
        entry.lastMoved.withLock { $0 = MonotonicClock.now() }
        switch frame.kind {
        case .answer:
            guard let waiter = entry.answer.withLock({ w in defer { w = nil }; return w }) else {
                return "a second answer to call \(frame.stream) (\(entry.call.summary))"
            }
            var frame = frame
            if entry.body == nil && frame.descriptor >= 0 {
                // Only a get's answer carries a file; any other is closed, never leaked.
                Glibc.close(frame.descriptor)
                frame.descriptor = -1
            }
            answeredBox.withLock { $0 += 1 }
            // Done unless a body follows in chunks: a get's, when no descriptor carries it.
            if entry.body == nil || frame.descriptor >= 0 { _ = pending.withLock { $0.removeValue(forKey: frame.stream) } }
            waiter.resume(returning: frame)
        case .failure:
            let error: any Error
            do throws(IPCError) { error = try WorkerAnswer.failure(frame.payload) } catch { return error.description }
            fail(frame.stream, entry.bodyFailure.withLock { $0 } ?? error)
        case .chunk:
            guard let body = entry.body, entry.answer.withLock({ $0 == nil }) else {
                return "a body chunk for call \(frame.stream) (\(entry.call.summary)), which has no body coming"
            }
            body.append(frame.payload)
        case .end:
            guard let body = entry.body else { return "a body end for call \(frame.stream), which has no body coming" }
            _ = pending.withLock { $0.removeValue(forKey: frame.stream) }
            body.finish()
        case .credit:
            var r = WireReader(frame.payload)
            guard let credit = entry.credit, let count = try? r.u32() else {
                return "a credit for call \(frame.stream) (\(entry.call.summary)), which sends no body"
            }
            credit.grant(Int(count))
        default:
            break
        }
        return nil
    }

    private func end(_ ending: Ending) {
        // The calls in flight are taken with the ending, under its lock: whoever asks for
        // ``inFlight`` once the wire has ended (the reaper's crash report) finds them.
        let all: [UInt32: Pending]? = endedBox.withLock { e in
            guard e == nil else { return nil }
            e = ending
            let taken = pending.withLock { p in defer { p.removeAll() }; return p }
            lostCalls.withLock { $0 = taken.values.map(\.call) }
            return taken
        }
        guard let all else { return }
        server?.finish()
        transport.close()
        deliverFirst(nil)
        for (_, entry) in all {
            let lost = WorkerLost(call: entry.call, ending: ending, sent: true, inFlight: all.count)
            entry.answer.withLock { w in defer { w = nil }; return w }?.resume(throwing: lost)
            entry.body?.fail(lost)
            entry.credit?.fail(lost)
        }
        onEnd(ending)
    }
}

/// A call whose worker went away before it was answered.
struct WorkerLost: Error, Sendable {
    let call: WorkerCall
    let ending: WorkerConnection.Ending
    /// Whether the call reached the worker (a put that did may have stored).
    let sent: Bool
    /// How many calls were in flight on the worker when it ended, this one included: one
    /// alone is likely what ended it.
    var inFlight: Int = 1
}
