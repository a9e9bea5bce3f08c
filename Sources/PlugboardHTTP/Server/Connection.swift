#if canImport(Glibc)
import Glibc
#endif
import CPlugboardFileSystem
import CPlugboardNetwork
import PlugboardAPI
import PlugboardConcurrency

/// One client connection, owned by one event loop: a state machine fed by readiness
/// events. Requests are taken one at a time (bytes of a pipelined next request wait in
/// the buffer), each handled by a Swift task that reads the body as it arrives and hands
/// back the response, which is written as the socket takes it.
///
/// Everything here runs on the loop's thread. The request's task reaches the connection
/// only through ``ConnectionHandle``, which queues its calls on the loop.
final class Connection: EventSource, @unchecked Sendable {
    // @unchecked Sendable: a request's task holds it only to pass it back to the loop
    // (``ConnectionHandle``); every property is read and written on the loop's thread.
    /// The response bytes a connection holds before its producer must wait.
    static let outboundHighWater = 256 << 10

    private enum Phase {
        /// Waiting for the first byte of a request; `first` on a new connection.
        case idle(since: Double, first: Bool)
        /// Inside a request head, since its first byte.
        case head(started: Double)
        /// Reading the body of the request being handled.
        case body
        /// The request is read; its handler is answering.
        case answering
        /// After an error answer: reading and dropping what the client still sends, so it
        /// reads the answer instead of a reset, until `until`.
        case lingering(until: Double, drained: Int)
        case closed
    }

    /// The request in progress (a class: it is updated in place many times a request,
    /// and a struct this size is copied at each update).
    private final class Current {
        /// Tells this request's calls from a late one of an earlier request's task.
        var serial: UInt64
        var head: RequestHead?
        var started: Double
        var channel: BodyChannel?
        var task: Task<Void, Never>?
        var status = 0
        var label: String?
        var bytes = 0
        var keepAlive = false
        /// The response's last byte has been queued (it may not have left yet).
        var responseQueued = false
        var responseStarted: Double?
        var deadline: Double?
        /// The decoder has passed the request's last byte.
        var requestEnded = false
        var streaming = false
        /// The answer's file region still to send after the head (``sendFile()``), and
        /// how much of it has left.
        var file: ObjectFileRegion?
        var fileSent = 0
        /// The region's next pages are being read into the page cache on a blocking thread.
        var fileLoading = false
        /// An answer made at once, waiting for the loop to write it (``writeReadyAnswer()``).
        var readyAnswer: HTTPResponse?

        /// What writing the answer asks of the head, read once: copying the head out of
        /// the optional for each question retained and released all its strings.
        let isHead: Bool
        let hasBody: Bool
        let version: HTTPVersion
        let keepAliveAsked: Bool

        init(serial: UInt64, head: RequestHead?, started: Double) {
            self.serial = serial
            self.head = head
            self.started = started
            isHead = head?.method == "HEAD"
            hasBody = head.map { $0.framing != .none && $0.framing != .length(0) } ?? false
            version = head?.version ?? .http11
            keepAliveAsked = head?.keepAlive ?? false
        }
    }

    let fd: Int32
    let peer: String
    private let server: ServerCore
    /// The handler of the listener that accepted this connection.
    private let handler: any HTTPHandler
    /// Unowned without a check: every call into a connection runs on its loop's thread
    /// while the loop runs, or from a ``ConnectionHandle``, which holds the loop; the
    /// checked form cost a runtime call at each of the ten uses a request.
    private unowned(unsafe) let loop: EventLoop
    private var id: UInt64 = 0
    private var phase: Phase
    private var decoder: RequestDecoder
    private var inbound: [UInt8] = []
    private var inStart = 0
    private var outbound: [[UInt8]] = []
    private var outHead = 0
    private var outOffset = 0
    private var outBytes = 0
    private var writeWaiter: CheckedContinuation<Void, any Error>?
    private var exchange: Current?
    private var serial: UInt64 = 0
    private var lastWrite = 0.0
    private var events: UInt32 = 0
    /// Reading is held back: the body's reader is behind, or the buffer waits for the
    /// current request to end.
    private var readPaused = false
    private var readRate: TransferRate
    private var writeRate: TransferRate
    /// When the body last made progress, and when response bytes began waiting.
    private var lastBodyByte = 0.0
    private var outboundSince: Double?
    private var stopping = false
    /// Inside ``process()``.
    private var processing = false
    private var peerClosed = false
    /// The current request's bytes arrived before the previous answer ended: the client
    /// pipelines.
    private var pipelined = false
    /// The client half-closed after pipelining: every request it sent is answered, and
    /// the connection closes after the last.
    private var answeringToTheEnd = false

    init(fd: Int32, peer: String, server: ServerCore, handler: any HTTPHandler, loop: EventLoop, now: Double) {
        self.fd = fd
        self.peer = peer
        self.server = server
        self.handler = handler
        self.loop = loop
        phase = .idle(since: now, first: true)
        decoder = RequestDecoder(limits: server.configuration.limits)
        readRate = TransferRate(now: now, windowSeconds: server.configuration.bodyTimeoutSeconds)
        writeRate = TransferRate(now: now)
    }

    /// Registers with the loop; false when epoll refused (the caller closes).
    func register() -> Bool {
        events = UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)
        guard let id = loop.register(fd, events: events, source: self) else { return false }
        self.id = id
        return true
    }

    // MARK: events

    func ready(_ mask: UInt32, loop: EventLoop) {
        if mask & (UInt32(PLUGBOARD_EPOLL_ERR) | UInt32(PLUGBOARD_EPOLL_HUP)) != 0 && mask & UInt32(PLUGBOARD_EPOLL_IN) == 0 {
            abort()
            return
        }
        if mask & UInt32(PLUGBOARD_EPOLL_OUT) != 0 { flush() }
        if case .closed = phase { return }
        if mask & (UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)) != 0 && !readPaused { readAvailable() }
    }

    func tick(_ now: Double, loop: EventLoop) {
        let c = server.configuration
        switch phase {
        case .idle(let since, let first):
            if stopping || now - since > (first ? c.firstByteTimeoutSeconds : c.idleTimeoutSeconds) { close() }
        case .head(let started):
            if now - started > c.headerTimeoutSeconds {
                refuse(HTTPError.timeout("request head not received in time",
                                         detail: "The request line and headers must arrive within \(c.headerTimeoutSeconds) s."))
            }
        case .body:
            guard !readPaused else { break }
            if now - lastBodyByte > c.bodyTimeoutSeconds {
                refuse(HTTPError.timeout("request body stalled", detail: "No byte arrived for \(c.bodyTimeoutSeconds) s."))
            } else if readRate.isBelow(c.minBodyBytesPerSecond, now: now) {
                refuse(HTTPError.timeout("request body too slow",
                    detail: "Fewer than \(c.minBodyBytesPerSecond) bytes per second over the last \(readRate.window) s."))
            }
        case .lingering(let until, _):
            if now > until { close() }
        case .answering, .closed:
            break
        }
        if !isClosed { checkDelivery(now) }
    }

    /// A client that does not read its answer: dropped when the socket took too little
    /// over the rate window, when nothing left for the write timeout, or when the whole
    /// answer has taken longer than its size allows.
    private func checkDelivery(_ now: Double) {
        let c = server.configuration
        guard outboundSince != nil else { return }
        let reason: String
        if now - lastWrite > c.writeTimeoutSeconds {
            reason = "read nothing of its answer for \(c.writeTimeoutSeconds) s"
        } else if writeRate.isBelow(c.minBodyBytesPerSecond, now: now) {
            reason = "read its answer at fewer than \(c.minBodyBytesPerSecond) bytes per second over \(writeRate.window) s"
        } else if let deadline = exchange?.deadline, now > deadline {
            reason = "took longer to read its answer than its size allows"
        } else {
            return
        }
        server.logger.info("dropping a client that \(reason)", metadata: ["peer": .string(peer)])
        abort()
    }

    /// The server stops: an idle connection closes now, a busy one after its answer.
    func stop() {
        stopping = true
        if case .idle = phase { close() }
    }

    // MARK: reading

    private func readAvailable() {
        // A few reads per event, so that one fast client cannot keep the loop to itself.
        for _ in 0..<4 {
            let n = loop.scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received(n)
                if readPaused { return }
                if case .closed = phase { return }
                if n < loop.scratch.count { return }
                continue
            }
            if n == 0 {
                endOfInput()
                return
            }
            let code = errno
            if code == EINTR { continue }
            if code != EAGAIN && code != EWOULDBLOCK { abort() }
            return
        }
    }

    private func received(_ n: Int) {
        let now = loop.now
        if case .lingering(let until, let drained) = phase {
            let total = drained + n
            if total > 4 << 20 { close() } else { phase = .lingering(until: until, drained: total) }
            return
        }
        if case .idle = phase { phase = .head(started: now) }
        if case .body = phase {
            readRate.add(n, now: now)
            lastBodyByte = now
        }
        compact()
        inbound.append(contentsOf: loop.scratch[0..<n])
        server.budget.take(n)
        process()
    }

    private func endOfInput() {
        peerClosed = true
        switch phase {
        case .idle, .closed: close()
        case .lingering: close()
        case .head, .body:
            refuse(decoder.errorAtEndOfInput() ?? HTTPError.badRequest("connection closed before the request ended"))
        case .answering:
            // The client sent all it will: a half close, or it went away, which look the
            // same until an answer is written. A client that pipelined has said what it
            // wants (every request it sent, read in order: `printf ... | nc -N` does so),
            // so each is answered before the connection closes. Otherwise it may still
            // read an answer that has begun, after which the connection ends; a request
            // still being handled is cancelled (as nginx and Go do), and its answer, if
            // any, is still written.
            readPaused = true
            updateInterest()
            if pipelined || inbound.count > inStart {
                answeringToTheEnd = true
            } else if exchange?.responseStarted == nil {
                exchange?.task?.cancel()
            }
        }
    }

    /// Decodes what the buffer holds, as far as the current phase allows.
    private func process() {
        // Answering a request can finish it and start the next (a pipelined one) from
        // inside this loop; the loop goes on with it instead of a nested call, so that
        // thousands of pipelined requests do not mean thousands of stack frames.
        if processing { return }
        processing = true
        defer { processing = false }
        while true {
            switch phase {
            case .head, .idle, .body: break
            case .answering:
                // A pipelined request waits for this answer; its bytes are held up to a head's worth.
                if inbound.count - inStart > decoder.headCapacity { pauseReading() }
                return
            case .lingering, .closed:
                return
            }
            let event: RequestDecoder.Event
            do throws(HTTPError) {
                event = try decoder.next(inbound, start: &inStart, end: inbound.count)
            } catch {
                refuse(error)
                return
            }
            switch event {
            case .needMore:
                compact()
                return
            case .head(let head):
                begin(head)
            case .body(let range):
                // Bytes of a body the handler refused early are dropped (the phase is then `.answering`).
                guard let channel = exchange?.channel else { continue }
                let waiting = channel.push(Array(inbound[range]))
                if waiting >= BodyChannel.highWater || server.budget.isSpent,
                   channel.pause(resume: { [loop] in loop.execute { [weak self] in self?.resumeReading() } }) {
                    pauseReading()
                    compact()
                    return
                }
            case .end:
                exchange?.requestEnded = true
                exchange?.channel?.finish()
                phase = .answering
                responseSent()
            }
        }
    }

    /// Starts handling a request whose head has arrived. The phase becomes `.body` (its
    /// `.end` comes next from the decoder, at once for a request without a body), or
    /// `.answering` when the body will not be read.
    private func begin(_ head: RequestHead) {
        let now = loop.now
        let started: Double
        if case .head(let s) = phase { started = s } else { started = now }
        serial += 1
        let current = Current(serial: serial, head: head, started: started)
        exchange = current
        let hasBody = current.hasBody
        phase = .body
        // A request without a body is screened by respondWithoutWaiting, with everything
        // else it resolves once; one with a body is screened here, before its body is read.
        let atOnce = !hasBody && server.configuration.answersWithoutWaiting
        if !atOnce, let early = handler.screen(head) {
            // The body, if any, stays unread, so the connection cannot go on after it.
            if hasBody { phase = .answering }
            writeResponse(early, keepAlive: !hasBody && head.keepAlive)
            return
        }
        // The bytes this connection read itself do not count: one read may be larger
        // than a small budget.
        if hasBody && server.budget.isSpent(excluding: inbound.count) {
            phase = .answering
            writeResponse(handler.refusal(HTTPError(503, PlugboardError(.httpUnavailable, "the server's body buffers are full",
                detail: "Bodies held in memory have reached --max-buffered-bytes (\(server.budget.limit) bytes).",
                hint: "Retry shortly."), headers: [("Retry-After", "1")]), head: head), keepAlive: false)
            return
        }
        if head.expectsContinue { enqueue(HTTPResponse.continueLine) }
        let body: RequestBody
        if hasBody {
            let channel = BodyChannel(budget: server.budget)
            exchange?.channel = channel
            let length: Int?
            switch head.framing {
            case .none: length = 0
            case .length(let n): length = n
            case .chunked: length = nil
            }
            readRate.restart(now: now)
            lastBodyByte = now
            body = RequestBody(length: length, channel: channel)
        } else {
            // Most requests (every GET) have no body: no channel to make and tear down.
            body = RequestBody([])
        }
        let request = HTTPRequest(head: head, body: body, screened: !atOnce)
        let handle = ConnectionHandle(connection: self, loop: loop, serial: serial)
        let handler = self.handler
        let work: @concurrent @Sendable () async -> Void
        switch atOnce ? handler.respondWithoutWaiting(to: request) : .none {
        case .answer(let answer):
            // No task at all: its start, frames and executor checks were the largest single
            // cost of a small GET (docs/BENCHMARKS.md, "Reads answered without a task").
            // Queued like a task's answer (see answer(_:)).
            if answer.stream == nil {
                exchange?.readyAnswer = answer
                loop.answerLater(self)
            } else {
                exchange?.task = Task.immediate { await handle.answer(answer) }
            }
            return
        case .later(let rest):
            work = { await handle.answer(await rest()) }
        case .none:
            let screened = atOnce ? HTTPRequest(head: head, body: body, screened: true) : request
            work = { await handle.answer(await handler.respond(to: screened)) }
        }
        // Started on this thread: a handler that never suspends (MemoryStorage, a cached
        // FileStorage read) answers without a thread hop. Without an executor
        // preference: with the loop as the task's preferred executor every await asked
        // the runtime for it, more CPU a request (docs/BENCHMARKS.md, "The request path
        // made cheaper"), to spare only the resumption after a real wait (a cold read) its
        // hop from the pool back here.
        exchange?.task = server.configuration.immediateHandlers
            ? Task.immediate(operation: work) : Task(operation: work)
    }

    // MARK: writing

    /// Queues the head of `response` and its whole body, or its head alone when it streams.
    fileprivate func writeResponse(_ response: HTTPResponse, keepAlive wanted: Bool) {
        guard let exchange, !exchange.responseQueued, exchange.responseStarted == nil else { return }
        let isHead = exchange.isHead
        let closes = HTTPError.isClosing(response.status)
        // An answer given while the body is still arriving (the handler did not read it)
        // ends the connection, as a refusal by `screen` does: nobody will read the rest,
        // and waiting for it would hold the connection forever.
        let bodyPending = !exchange.requestEnded && exchange.hasBody
        // After a half close, only a request whose successor is already here keeps it open.
        let inputLeft = !peerClosed || (answeringToTheEnd && inbound.count > inStart)
        let keepAlive = wanted && !closes && !stopping && inputLeft && !bodyPending
        exchange.keepAlive = keepAlive
        exchange.status = response.status
        exchange.label = response.label
        let now = loop.now
        exchange.responseStarted = now
        let length = isHead ? 0 : response.contentLength
        exchange.deadline = now + server.configuration.writeTimeoutSeconds
            + Double(length) / Double(max(1, server.configuration.minBodyBytesPerSecond))
        var bytes: [UInt8] = []
        let bodyApart = response.write(into: &bytes, head: isHead, keepAlive: keepAlive, version: exchange.version,
                                       date: loop.httpDate)
        exchange.bytes = isHead ? 0 : response.body.count
        if response.stream == nil || isHead || response.forbidsContent {
            exchange.responseQueued = true
        } else if let file = response.stream?.file {
            exchange.file = file
        } else {
            exchange.streaming = true
        }
        // A body not copied behind the head is its own buffer after it: both leave in one sendmsg (flush).
        if bodyApart {
            enqueue(bytes, flushing: false)
            enqueue(response.body)
        } else if bytes.count > 0 {
            enqueue(bytes)
        }
        bytes = []
        if exchange.responseQueued { responseSent() }
    }

    /// A chunk of a streamed body; `done` after its last byte.
    fileprivate func writeChunk(_ chunk: [UInt8], serial: UInt64, waiter: CheckedContinuation<Void, any Error>) {
        guard let exchange, exchange.serial == serial, exchange.streaming, !exchange.responseQueued, !isClosed else {
            waiter.resume(throwing: CancellationError())
            return
        }
        self.exchange?.bytes += chunk.count
        if !chunk.isEmpty { enqueue(chunk) }
        if canTakeMore(resuming: false) {
            waiter.resume()
        } else {
            writeWaiter = waiter
        }
    }

    /// Whether a streamed answer's producer may hand over another chunk: while the socket
    /// takes them (at most ``outboundHighWater`` queued, then until half is gone), and,
    /// once all connections together hold `--max-buffered-bytes`, only when this one holds
    /// nothing: its share is then the one chunk it is sending, and a client that stops
    /// reading stops its producer with it.
    private func canTakeMore(resuming: Bool) -> Bool {
        guard outBytes <= (resuming ? Self.outboundHighWater / 2 : Self.outboundHighWater) else { return false }
        return outBytes == 0 || !server.budget.isSpent
    }

    fileprivate func streamEnded(failed: Bool, serial: UInt64) {
        guard let exchange, exchange.serial == serial, exchange.streaming, !isClosed else { return }
        if failed {
            // The head promised a length that will not be delivered: the connection ends.
            abort()
            return
        }
        exchange.responseQueued = true
        responseSent()
    }

    private var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Queues `bytes` (never empty) and, unless `flushing` is false because another piece
    /// follows at once, writes what the socket takes.
    private func enqueue(_ bytes: [UInt8], flushing: Bool = true) {
        outbound.append(bytes)
        outBytes += bytes.count
        server.budget.take(bytes.count)
        if outboundSince == nil {
            let now = loop.now
            outboundSince = now
            lastWrite = now
            writeRate.restart(now: now)
        }
        if flushing { flush() }
    }

    /// One `sendmsg` of the first two queued pieces (a head and its body), or `send` of
    /// the first: the bytes taken, or -1 with errno.
    private func sendQueued() -> Int {
        let first = outHead, offset = outOffset
        guard outbound.count - first >= 2 else {
            return outbound[first].withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
        }
        return outbound[first].withUnsafeBytes { a in
            outbound[first + 1].withUnsafeBytes { b in
                var pieces = (iovec(iov_base: UnsafeMutableRawPointer(mutating: a.baseAddress! + offset), iov_len: a.count - offset),
                              iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress!), iov_len: b.count))
                return withUnsafeMutableBytes(of: &pieces) { raw in
                    var message = msghdr()
                    message.msg_iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
                    message.msg_iovlen = 2
                    // sendmsg, not writev: MSG_NOSIGNAL, so that a peer gone away is an
                    // error here rather than a SIGPIPE for the whole process.
                    return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                }
            }
        }
    }

    private func flush() {
        while outHead < outbound.count {
            let n = sendQueued()
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { break }
                abort()
                return
            }
            lastWrite = loop.now
            writeRate.add(n, now: lastWrite)
            outBytes -= n
            server.budget.give(n)
            var taken = n
            while taken > 0 {
                let left = outbound[outHead].count - outOffset
                if taken < left {
                    outOffset += taken
                    break
                }
                taken -= left
                outbound[outHead] = []
                outHead += 1
                outOffset = 0
            }
        }
        if outHead == outbound.count {
            outbound.removeAll(keepingCapacity: outbound.count <= 4)
            outHead = 0
            guard sendFile() else { return }
            if exchange?.file == nil { outboundSince = nil }
        }
        if let waiter = writeWaiter, canTakeMore(resuming: true) {
            writeWaiter = nil
            waiter.resume()
        }
        updateInterest()
        if outBytes == 0, exchange?.responseQueued == true { responseSent() }
    }

    /// Sends what the socket takes of the answer's file region, once the head has left:
    /// `sendfile` from the page cache, a few calls a turn so that one fast client cannot
    /// keep the loop to itself (writability brings it back). False when the connection
    /// ended: an error, or a file shorter than the head announced.
    private func sendFile() -> Bool {
        guard let exchange, let file = exchange.file, !exchange.fileLoading else { return true }
        for _ in 0..<4 {
            let left = file.length - exchange.fileSent
            guard left > 0 else { break }
            let count = min(left, Self.fileChunkBytes)
            guard Self.isCached(file, at: exchange.fileSent, count: count) else {
                load(file, at: exchange.fileSent, count: count, for: exchange)
                return true
            }
            var offset = off_t(file.offset + exchange.fileSent)
            let n = Glibc.sendfile(fd, file.descriptor, &offset, count)
            if n > 0 {
                exchange.fileSent += n
                exchange.bytes += n
                lastWrite = loop.now
                writeRate.add(n, now: lastWrite)
                continue
            }
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return true }
            if n == 0 {
                server.logger.warning("a file region ended before its length; the answer is cut short",
                                      metadata: ["peer": .string(peer), "sent": .string("\(exchange.fileSent)"),
                                                 "length": .string("\(file.length)")])
            }
            abort()
            return false
        }
        if exchange.fileSent == file.length {
            exchange.file = nil
            exchange.responseQueued = true
        }
        return true
    }

    /// Whether the `count` bytes at `position` of the region are in the page cache, judged
    /// by their last byte, read with a call that never waits for the disk
    /// (`preadv2(RWF_NOWAIT)`, as FileStorage reads): `sendfile` of pages that are not
    /// would wait for the disk on the loop's thread. A kernel or file that cannot tell
    /// counts as cached.
    private static func isCached(_ file: ObjectFileRegion, at position: Int, count: Int) -> Bool {
        var byte: UInt8 = 0
        let n = plugboard_pread_cached(file.descriptor, &byte, 1, off_t(file.offset + position + count - 1))
        return n >= 0 || errno != EAGAIN
    }

    /// Reads the region's next `count` bytes on a blocking thread (``BlockingWork``), which
    /// leaves them in the page cache, then sends on: the loop meanwhile serves the others.
    private func load(_ file: ObjectFileRegion, at position: Int, count: Int, for exchange: Current) {
        exchange.fileLoading = true
        let (loop, serial) = (self.loop, exchange.serial)
        Task {
            // What the read finds wrong, `sendfile` finds again and ends the connection over.
            try? await BlockingWork.run { () throws(PlugboardError) in
                var done = 0
                while done < count {
                    let piece = try file.read(count: min(Self.loadPieceBytes, count - done), at: position + done)
                    if piece.isEmpty { break }
                    done += piece.count
                }
            }
            loop.execute { [weak self] in self?.fileLoaded(serial: serial) }
        }
    }

    private func fileLoaded(serial: UInt64) {
        guard let exchange, exchange.serial == serial, exchange.fileLoading, !isClosed else { return }
        exchange.fileLoading = false
        flush()
    }

    static let loadPieceBytes = 256 << 10

    /// The most one `sendfile` call is asked for: what nginx's `sendfile_max_chunk` is by
    /// default, so that one call never holds the loop long.
    static let fileChunkBytes = 2 << 20

    /// Called whenever the answer may be complete: once its last byte has left, the
    /// exchange ends and the connection takes the next request, or closes.
    private func responseSent() {
        guard outBytes == 0, let exchange, exchange.responseQueued else { return }
        // A kept-alive answer given before the request's end waits for it (the decoder is
        // one event away for a request without a body).
        if exchange.keepAlive && !exchange.requestEnded, case .body = phase { return }
        finishExchange()
        if exchange.keepAlive && exchange.requestEnded && !stopping && (!peerClosed || answeringToTheEnd) {
            pipelined = inbound.count > inStart
            phase = .idle(since: loop.now, first: false)
            resumeReading()
            process()
            // Half closed: nothing more will arrive, so what is left is answered now.
            if answeringToTheEnd {
                switch phase {
                case .idle where decoder.isBetweenMessages && inbound.count == inStart:
                    close()
                case .idle, .head, .body:
                    // A request cut short by the close: its head or its body is incomplete.
                    refuse(decoder.errorAtEndOfInput() ?? HTTPError.badRequest("connection closed before the request ended"))
                case .answering, .lingering, .closed:
                    break
                }
            }
        } else if !exchange.requestEnded || inbound.count > inStart || HTTPError.isClosing(exchange.status) {
            // Unread bytes at close() would reset the connection, and the client could
            // lose the answer it has not read yet.
            linger()
        } else {
            close()
        }
    }

    private func finishExchange() {
        guard let exchange else { return }
        self.exchange = nil
        exchange.channel?.discard()
        handler.completed(PlugboardHTTP.Exchange(
            method: exchange.head?.method ?? "-", target: exchange.head?.target ?? "-", status: exchange.status,
            bytes: exchange.bytes, durationSeconds: MonotonicClock.now() - exchange.started, peer: peer, label: exchange.label))
    }

    /// Answers a request refused at the HTTP level, then lingers and closes.
    private func refuse(_ error: HTTPError) {
        let head = exchange?.head
        if exchange == nil {
            serial += 1
            exchange = Current(serial: serial, head: nil, started: loop.now)
        }
        exchange?.channel?.fail(error)
        if exchange?.responseStarted != nil {
            // The answer has begun: nothing more can be said on this connection.
            abort()
            return
        }
        exchange?.task?.cancel()
        phase = .answering
        writeResponse(handler.refusal(error, head: head), keepAlive: false)
    }

    // MARK: closing

    private func linger() {
        if peerClosed {
            close()
            return
        }
        shutdown(fd, Int32(SHUT_WR))
        phase = .lingering(until: loop.now + 2, drained: 0)
        resumeReading()
    }

    /// Ends the connection at once: its request's task is cancelled, its body fails.
    func abort() {
        if let exchange {
            exchange.task?.cancel()
            exchange.channel?.fail(HTTPError.badRequest("connection closed before the body ended"))
            if exchange.responseStarted != nil { finishExchange() }
        }
        exchange = nil
        close()
    }

    /// Deregisters, gives back what the connection held, then closes the descriptor: in
    /// this order, so that no one can act on the number once another socket may have it.
    private func close() {
        guard !isClosed else { return }
        phase = .closed
        if let exchange {
            exchange.task?.cancel()
            exchange.channel?.fail(HTTPError.badRequest("connection closed before the body ended"))
            exchange.channel?.discard()
        }
        exchange = nil
        if let waiter = writeWaiter {
            writeWaiter = nil
            waiter.resume(throwing: CancellationError())
        }
        server.budget.give(outBytes + inbound.count)
        outbound = []
        inbound = []
        outBytes = 0
        inStart = 0
        loop.remove(fd, id: id)
        server.limits.release(peer: peer)
        Glibc.close(fd)
    }

    // MARK: buffers and interest

    private func compact() {
        guard inStart > 0 else { return }
        let consumed = inStart
        if inStart == inbound.count {
            inbound.removeAll(keepingCapacity: inbound.capacity <= 16 << 10)
        } else {
            inbound.removeSubrange(0..<inStart)
        }
        inStart = 0
        server.budget.give(consumed)
    }

    private func pauseReading() {
        guard !readPaused else { return }
        readPaused = true
        updateInterest()
    }

    private func resumeReading() {
        guard readPaused, !peerClosed, !isClosed else { return }
        readPaused = false
        readRate.restart(now: loop.now)
        lastBodyByte = loop.now
        updateInterest()
        // Bytes that arrived before the pause are decoded first.
        process()
        if !readPaused { readAvailable() }
    }

    private func updateInterest() {
        guard !isClosed else { return }
        var wanted: UInt32 = readPaused ? 0 : UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)
        if outBytes > 0 || (exchange?.file != nil && exchange?.fileLoading == false) { wanted |= UInt32(PLUGBOARD_EPOLL_OUT) }
        guard wanted != events else { return }
        events = wanted
        loop.modify(fd, id: id, events: wanted)
    }
}

/// How a request's task reaches its connection: every call is queued on the connection's
/// loop, so the connection itself stays on one thread.
struct ConnectionHandle: Sendable {
    let connection: Connection
    let loop: EventLoop
    let serial: UInt64

    func answer(_ response: HTTPResponse) async {
        let (connection, serial) = (self.connection, self.serial)
        // Queued even from the loop's own thread (a task that answered before its first
        // suspension): the loop writes the answers of a batch of events after reading
        // them all. Writing each at once cost more CPU an answer, not less (docs/BENCHMARKS.md,
        // "Instructions a request", tried and left out).
        loop.execute { connection.writeResponseFromTask(response, serial: serial) }
        // A file region is sent by the loop itself (Connection.sendFile()).
        guard let stream = response.stream, !response.forbidsContent, stream.file == nil else { return }
        var sent = 0
        var failed = false
        do {
            while let chunk = try await stream.next() {
                sent += chunk.count
                if sent > stream.length { failed = true; break }
                try await write(chunk)
            }
            if sent != stream.length { failed = true }
        } catch {
            failed = true
        }
        loop.execute { [failed] in connection.streamEnded(failed: failed, serial: serial) }
    }

    private func write(_ chunk: [UInt8]) async throws {
        let (connection, serial) = (self.connection, self.serial)
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            loop.execute { connection.writeChunk(chunk, serial: serial, waiter: waiter) }
        }
    }
}

extension Connection {
    /// The answer ``begin(_:)`` made at once, if its exchange is still the current one.
    func writeReadyAnswer() {
        guard let exchange, let answer = exchange.readyAnswer else { return }
        exchange.readyAnswer = nil
        writeResponse(answer, keepAlive: exchange.keepAliveAsked)
    }

    /// The task's answer, kept alive as the request asked.
    fileprivate func writeResponseFromTask(_ response: HTTPResponse, serial: UInt64) {
        guard let exchange, exchange.serial == serial, exchange.head != nil else { return }
        writeResponse(response, keepAlive: exchange.keepAliveAsked)
    }
}
