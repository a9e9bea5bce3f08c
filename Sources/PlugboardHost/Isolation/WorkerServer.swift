import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC
#if canImport(Glibc)
import Glibc
#endif

/// The serving side of the worker protocol: takes the calls of the other side's
/// ``WorkerConnection`` and runs each as a task against a storage (a read the storage can
/// answer at once is answered on the reader thread, with no task); answers go back on the
/// same wire.
///
/// In a worker it serves the host's calls to the plugin, on its own reader thread
/// (``start()``), which hands the frames of the worker's own calls (an isolated layer's, to
/// the storage it wraps) to its ``WorkerConnection``. In the host it serves those calls
/// from the wrapped storage: the host's connection hands it their frames (``handle(_:)``).
final class WorkerServer: Sendable {
    private let transport: any FrameTransport
    /// The storage a call names (nil: unnamed), or why there is none.
    private let storage: @Sendable (String?) throws(PlugboardError) -> any ObjectStorage
    private let health: @Sendable (String?) -> (any HealthChecking)?
    /// This side's own calls over the same wire, whose frames the reader hands over.
    private let client: WorkerConnection?
    /// Calls running as tasks, to cancel; put bodies arriving; get bodies' allowances.
    private let tasks = LockedValueBox<[UInt32: Task<Void, Never>]>([:])
    private let bodies = LockedValueBox<[UInt32: InboundBody]>([:])
    private let credits = LockedValueBox<[UInt32: BodyCredit]>([:])
    private let stopped = LockedValueBox<(told: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    /// What the reader thread sends (``ReaderOutbox``).
    private let outbox: ReaderOutbox

    init(transport: any FrameTransport, storage: @escaping @Sendable (String?) throws(PlugboardError) -> any ObjectStorage,
         health: @escaping @Sendable (String?) -> (any HealthChecking)?, client: WorkerConnection? = nil, bothWays: Bool = false) {
        self.transport = transport
        self.outbox = ReaderOutbox(transport: transport, queued: bothWays || client != nil)
        self.storage = storage
        self.health = health
        self.client = client
    }

    /// Starts the reader thread (a worker's). False when no thread could be made.
    func start() -> Bool {
        Threads.spawn { [self] in readLoop() }
    }

    /// Returns once the host says stop or goes away. The reader goes on after a stop, for
    /// the answers to the worker's own calls while its plugin stops.
    func serve() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let now = stopped.withLock { s -> Bool in
                if s.told { return true }
                s.waiter = done
                return false
            }
            if now { done.resume() }
        }
    }

    /// Whether a call is being served: the caller waits on this side, it does not hang.
    var isServing: Bool {
        tasks.withLock { !$0.isEmpty } || bodies.withLock { !$0.isEmpty } || credits.withLock { !$0.isEmpty }
    }

    /// Ends every call being served (the wire ended, or the host said stop).
    func finish() {
        for task in tasks.withLock({ t in defer { t.removeAll() }; return Array(t.values) }) { task.cancel() }
        for body in bodies.withLock({ b in defer { b.removeAll() }; return Array(b.values) }) { body.fail(CancellationError()) }
        for credit in credits.withLock({ c in defer { c.removeAll() }; return Array(c.values) }) { credit.fail(CancellationError()) }
        stopped.withLock { s in
            s.told = true
            defer { s.waiter = nil }
            return s.waiter
        }?.resume()
    }

    private func readLoop() {
        while true {
            guard let frame = try? transport.receive() else {
                finish()
                client?.wireEnded()
                return
            }
            if StreamOrigin.isWorkers(frame.stream), let client {
                client.receive(frame)
                continue
            }
            switch frame.kind {
            case .ping: outbox.send(Frame(.pong, payload: frame.payload))
            case .stop: finish()
            default: handle(frame)
            }
        }
    }

    /// Takes one frame of a call this side serves: its call, its put body's pieces, the
    /// caller's allowance for its get body, its cancellation. Anything else is dropped:
    /// the other side speaks the same protocol, and what it sends is not trusted.
    func handle(_ frame: Frame) {
        if frame.descriptor >= 0 { Glibc.close(frame.descriptor) }
        switch frame.kind {
        case .call: begin(frame)
        case .chunk: bodies.withLock { $0[frame.stream] }?.append(frame.payload)
        case .end: bodies.withLock { $0.removeValue(forKey: frame.stream) }?.finish()
        case .failure:
            let error = (try? WorkerAnswer.failure(frame.payload)) ?? CancellationError()
            bodies.withLock { $0.removeValue(forKey: frame.stream) }?.fail(error)
        case .credit:
            var r = WireReader(frame.payload)
            if let count = try? r.u32() { credits.withLock { $0[frame.stream] }?.grant(Int(count)) }
        case .cancel:
            tasks.withLock { $0.removeValue(forKey: frame.stream) }?.cancel()
            bodies.withLock { $0.removeValue(forKey: frame.stream) }?.fail(CancellationError())
            credits.withLock { $0.removeValue(forKey: frame.stream) }?.fail(CancellationError())
        default:
            break
        }
    }

    private func begin(_ frame: Frame) {
        let stream = frame.stream
        let decoded: (service: String?, call: WorkerCall)
        do throws(IPCError) {
            decoded = try WorkerCall.decode(frame.payload)
        } catch {
            fail(stream, PlugboardError(.isolationProtocolViolation, "the worker could not read a call: \(error)"))
            return
        }
        let call = decoded.call
        if case .healthCheck(let name) = call {
            run(stream) { [self] in
                try await health(name)?.healthCheck()
                try transport.send(Frame(.answer, stream: stream))
            }
            return
        }
        let storage: any ObjectStorage
        do throws(PlugboardError) {
            storage = try self.storage(decoded.service)
        } catch {
            fail(stream, error)
            return
        }
        switch call {
        case .get(let key, let range):
            // A read the storage answers without waiting goes back from this thread.
            do {
                if let ready = try storage.getWithoutWaiting(key, range: range) {
                    answerAtOnce(ready, stream: stream)
                    return
                }
            } catch {
                fail(stream, error)
                return
            }
            let credit = BodyCredit()
            credits.withLock { $0[stream] = credit }
            run(stream) { [self] in
                let object = try await storage.get(key, range: range)
                try await send(object, stream: stream, credit: credit)
            }
        case .head(let key):
            // As the server answers a HEAD: the first byte read at once brings the whole
            // object's info (ObjectStorage's contract for getWithoutWaiting), with no task.
            do {
                if let ready = try storage.getWithoutWaiting(key, range: .closed(first: 0, last: 0)) {
                    outbox.send(Frame(.answer, stream: stream, payload: WorkerAnswer.infoOnly(ready.info)))
                    return
                }
            } catch where error.code == .storageRangeNotSatisfiable {
                // An empty object has no first byte: its head comes from the task below.
            } catch {
                fail(stream, error)
                return
            }
            run(stream) { [self] in
                let info = try await storage.head(key)
                try transport.send(Frame(.answer, stream: stream, payload: WorkerAnswer.infoOnly(info)))
            }
        case .put(let key, let contentType, let metadata, let condition, let length):
            let body = InboundBody(taken: { [outbox] count in outbox.credit(count, stream: stream) })
            bodies.withLock { $0[stream] = body }
            run(stream) { [self] in
                let info = try await storage.put(key, body: ObjectBody(length: length) { try await body.next() },
                                                 contentType: contentType, metadata: metadata, condition: condition)
                try transport.send(Frame(.answer, stream: stream, payload: WorkerAnswer.infoOnly(info)))
            }
        case .delete(let key):
            run(stream) { [self] in
                try await storage.delete(key)
                try transport.send(Frame(.answer, stream: stream))
            }
        case .list(let prefix, let limit, let token):
            run(stream) { [self] in
                let listing = try await storage.list(prefix: prefix, limit: limit, continuationToken: token)
                try transport.send(Frame(.answer, stream: stream, payload: WorkerAnswer.listing(listing)))
            }
        case .healthCheck:
            break
        }
    }

    /// Runs a call's work as a task the host can cancel; its failure is the call's answer.
    private func run(_ stream: UInt32, _ work: @escaping @Sendable () async throws -> Void) {
        // Made under the lock: a task that ends at once removes itself only after it is in.
        tasks.withLock { tasks in
            tasks[stream] = Task { [self] in
                do {
                    try await work()
                } catch {
                    fail(stream, error)
                }
                self.tasks.withLock { _ = $0.removeValue(forKey: stream) }
                bodies.withLock { _ = $0.removeValue(forKey: stream) }
                credits.withLock { _ = $0.removeValue(forKey: stream) }
            }
        }
    }

    private func fail(_ stream: UInt32, _ error: any Error) {
        outbox.send(Frame(.failure, stream: stream, payload: WorkerAnswer.failure(error)))
    }

    /// A read the storage answered without waiting, sent whole from the reader thread:
    /// the bytes are in hand, so no allowance is waited for.
    private func answerAtOnce(_ ready: ReadyObject, stream: UInt32) {
        let head = WorkerAnswer.Stream(info: ready.info, range: ready.range, length: ready.bytes.count, fileOffset: nil)
        var frames = [Frame(.answer, stream: stream, payload: head.encoded())]
        var start = 0
        while start < ready.bytes.count {
            let end = min(ready.bytes.count, start + Frame.maxPayload)
            frames.append(Frame(.chunk, stream: stream, payload: Array(ready.bytes[start..<end])))
            start = end
        }
        frames.append(Frame(.end, stream: stream))
        outbox.send(frames)
    }

    /// A get's answer: with a file region, its descriptor goes with the head and no chunk
    /// follows; else the body in chunks under the host's allowance.
    private func send(_ object: ObjectStream, stream: UInt32, credit: BodyCredit) async throws {
        if let region = object.body.fileRegion {
            // The open file goes over as it is: the host sends it with sendfile, no byte
            // of it passes through either process.
            let head = WorkerAnswer.Stream(info: object.info, range: object.range, length: region.length, fileOffset: region.offset)
            try transport.send(Frame(.answer, stream: stream, payload: head.encoded(), descriptor: region.descriptor))
            withExtendedLifetime(region) {}
            return
        }
        let length = object.range?.count ?? object.info.size
        try transport.send(Frame(.answer, stream: stream,
                                 payload: WorkerAnswer.Stream(info: object.info, range: object.range, length: length, fileOffset: nil).encoded()))
        try await object.body.send(as: stream, over: transport, credit: credit)
    }
}
