#if canImport(Glibc)
import Glibc
#endif
import CPlugboardFileSystem
import CPlugboardNetwork
import PlugboardAPI
import PlugboardConcurrency

/// One client connection, owned by one event loop: the system calls, buffers and handler
/// of a ``ConnectionStateMachine``, which decides. Readiness events and the handler's
/// answers go in as the machine's events; what it returns is done here. Requests are taken
/// one at a time (bytes of a pipelined next request wait in the buffer), each handled by a
/// Swift task that reads the body as it arrives and hands back the response, which is
/// written as the socket takes it, or answered at once on the loop
/// (``HTTPHandler/respondWithoutWaiting(to:)``).
///
/// Everything here runs on the loop's thread (checked in debug builds). The request's
/// task reaches the connection only through ``ConnectionHandle``, which queues its calls
/// on the loop.
final class Connection: EventSource {
    /// The response bytes a connection holds before its producer must wait.
    static let outboundHighWater = 256 << 10

    /// What the request in progress holds (a class: it is updated in place many times a
    /// request, and a struct this size is copied at each update). Its protocol state is
    /// the machine's ``ConnectionStateMachine/Exchange`` of the same serial.
    private final class Current {
        let serial: UInt64
        /// Nil for a refusal of a head that could not be read.
        let head: RequestHead?
        var channel: BodyChannel?
        var task: Task<Void, Never>?
        var label: String?
        var bytes = 0
        /// The answer's body is being streamed by its task (``ConnectionHandle``).
        var streaming = false
        /// The answer's file region still to send after the head (``sendFile()``), and
        /// how much of it has left.
        var file: ObjectFileRegion?
        var fileSent = 0
        /// The region's next pages are being read into the page cache on a blocking thread.
        var fileLoading = false
        /// An answer made at once, waiting for the loop to write it (``writeReadyAnswer()``).
        var readyAnswer: HTTPResponse?

        init(serial: UInt64, head: RequestHead?) {
            self.serial = serial
            self.head = head
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
    private var machine: ConnectionStateMachine
    private var decoder: RequestDecoder
    private var current: Current?
    private var inbound: [UInt8] = []
    private var inStart = 0
    private var outbound: [[UInt8]] = []
    private var outHead = 0
    private var outOffset = 0
    private var outBytes = 0
    private var writeWaiter: CheckedContinuation<Void, any Error>?
    /// The epoll interest registered now.
    private var events: UInt32 = 0
    /// Inside ``process()``.
    private var processing = false

    init(fd: Int32, peer: String, server: ServerCore, handler: any HTTPHandler, loop: EventLoop, now: Double) {
        self.fd = fd
        self.peer = peer
        self.server = server
        self.handler = handler
        self.loop = loop
        machine = ConnectionStateMachine(now: now, timeouts: .init(server.configuration))
        decoder = RequestDecoder(limits: server.configuration.limits)
    }

    /// Registers with the loop; false when epoll refused (the caller closes).
    func register() -> Bool {
        loop.assertInLoop()
        events = UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)
        guard let id = loop.register(fd, events: events, source: self) else { return false }
        self.id = id
        return true
    }

    /// Unread bytes of the client's requests are buffered.
    private var buffered: Bool { inbound.count > inStart }

    // MARK: events

    func ready(_ mask: UInt32, loop: EventLoop) {
        loop.assertInLoop()
        if mask & (UInt32(PLUGBOARD_EPOLL_ERR) | UInt32(PLUGBOARD_EPOLL_HUP)) != 0 && mask & UInt32(PLUGBOARD_EPOLL_IN) == 0 {
            abort()
            return
        }
        if mask & UInt32(PLUGBOARD_EPOLL_OUT) != 0 { flush() }
        if machine.isClosed { return }
        if mask & (UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)) != 0 && !machine.readPaused { readAvailable() }
    }

    func tick(_ now: Double, loop: EventLoop) {
        loop.assertInLoop()
        switch machine.tick(now: now) {
        case .none:
            break
        case .close:
            close()
        case .refuse(let error):
            refuse(error)
        case .drop(let reason):
            server.logger.info("dropping a client that \(reason)", metadata: ["peer": .string(peer)])
            abort()
        }
    }

    /// The server stops: an idle connection closes now, a busy one after its answer.
    func stop() {
        loop.assertInLoop()
        if machine.stop() { close() }
    }

    // MARK: reading

    private func readAvailable() {
        // A few reads per event, so that one fast client cannot keep the loop to itself.
        for _ in 0..<4 {
            let n = loop.scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received(n)
                if machine.readPaused || machine.isClosed { return }
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
        switch machine.bytesRead(n, now: loop.now) {
        case .drop:
            return
        case .close:
            close()
        case .decode:
            compact()
            inbound.append(contentsOf: loop.scratch[0..<n])
            server.budget.take(n)
            process()
        }
    }

    private func endOfInput() {
        switch machine.endOfInput(buffered: buffered) {
        case .close:
            close()
        case .refuseIncomplete:
            refuse(decoder.errorAtEndOfInput() ?? HTTPError.badRequest("connection closed before the request ended"))
        case .stopReading(let cancelHandler):
            updateInterest()
            if cancelHandler { current?.task?.cancel() }
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
            switch machine.decodeAction(buffered: inbound.count - inStart, headCapacity: decoder.headCapacity) {
            case .decode: break
            case .pauseReading:
                pauseReading()
                return
            case .wait:
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
                guard let channel = current?.channel else { continue }
                let waiting = channel.push(Array(inbound[range]))
                if waiting >= BodyChannel.highWater || server.budget.isSpent,
                   channel.pause(resume: { [connection = LoopBound(self, loop: loop)] in connection.execute { $0.resumeReading() } }) {
                    pauseReading()
                    compact()
                    return
                }
            case .end:
                machine.requestDecoded()
                current?.channel?.finish()
                answerMayBeComplete()
            }
        }
    }

    /// Starts handling a request whose head has arrived. The machine's phase becomes
    /// `.body` (its `.end` comes next from the decoder, at once for a request without a
    /// body), or `.answering` when the body will not be read.
    private func begin(_ head: RequestHead) {
        let now = loop.now
        let exchange = machine.headDecoded(head, now: now)
        let current = Current(serial: exchange.serial, head: head)
        self.current = current
        let hasBody = exchange.hasBody
        // A request without a body is screened by respondWithoutWaiting, with everything
        // else it resolves once; one with a body is screened here, before its body is read.
        let atOnce = !hasBody && server.configuration.answersWithoutWaiting
        if !atOnce, let early = handler.screen(head) {
            // The body, if any, stays unread, so the connection cannot go on after it.
            if hasBody { machine.bodyLeftUnread() }
            writeResponse(early, keepAlive: !hasBody && head.keepAlive)
            return
        }
        // The bytes this connection read itself do not count: one read may be larger
        // than a small budget.
        if hasBody && server.budget.isSpent(excluding: inbound.count) {
            machine.bodyLeftUnread()
            writeResponse(handler.refusal(HTTPError(503, PlugboardError(.httpUnavailable, "the server's body buffers are full",
                detail: "Bodies held in memory have reached --max-buffered-bytes (\(server.budget.limit) bytes).",
                hint: "Retry shortly."), headers: [("Retry-After", "1")]), head: head), keepAlive: false)
            return
        }
        if head.expectsContinue { enqueue(HTTPResponse.continueLine) }
        let body: RequestBody
        if hasBody {
            let channel = BodyChannel(budget: server.budget)
            current.channel = channel
            let length: Int?
            switch head.framing {
            case .none: length = 0
            case .length(let n): length = n
            case .chunked: length = nil
            }
            machine.bodyStarted(now: now)
            body = RequestBody(length: length, channel: channel)
        } else {
            // Most requests (every GET) have no body: no channel to make and tear down.
            body = RequestBody([])
        }
        let request = HTTPRequest(head: head, body: body, screened: !atOnce)
        let handle = ConnectionHandle(connection: LoopBound(self, loop: loop), serial: exchange.serial)
        let handler = self.handler
        let work: @concurrent @Sendable () async -> Void
        switch atOnce ? handler.respondWithoutWaiting(to: request) : .none {
        case .answer(let answer):
            // No task at all: its start, frames and executor checks were the largest single
            // cost of a small GET (docs/BENCHMARKS.md, "Reads answered without a task").
            // Queued like a task's answer (see answer(_:)).
            if answer.stream == nil {
                current.readyAnswer = answer
                loop.answerLater(self)
            } else {
                current.task = Task.immediate { await handle.answer(answer) }
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
        current.task = server.configuration.immediateHandlers
            ? Task.immediate(operation: work) : Task(operation: work)
    }

    // MARK: writing

    /// Queues the head of `response` and its whole body, or its head alone when it streams.
    fileprivate func writeResponse(_ response: HTTPResponse, keepAlive wanted: Bool) {
        guard let current else { return }
        let now = loop.now
        guard let start = machine.answerStarting(status: response.status, contentLength: response.contentLength,
                                                 keepAliveWanted: wanted, buffered: buffered, now: now) else { return }
        let isHead = start.isHead
        current.label = response.label
        var bytes: [UInt8] = []
        let bodyApart = response.write(into: &bytes, head: isHead, keepAlive: start.keepAlive, version: start.version,
                                       date: loop.httpDate)
        current.bytes = isHead ? 0 : response.body.count
        var queued = false
        if response.stream == nil || isHead || response.forbidsContent {
            queued = true
            machine.answerQueued()
        } else if let file = response.stream?.file {
            current.file = file
        } else {
            current.streaming = true
        }
        // A body not copied behind the head is its own buffer after it: both leave in one sendmsg (flush).
        if bodyApart {
            enqueue(bytes, flushing: false)
            enqueue(response.body)
        } else if bytes.count > 0 {
            enqueue(bytes)
        }
        bytes = []
        if queued { answerMayBeComplete() }
    }

    /// A chunk of a streamed body; `done` after its last byte.
    fileprivate func writeChunk(_ chunk: [UInt8], serial: UInt64, waiter: CheckedContinuation<Void, any Error>) {
        guard let current, current.serial == serial, current.streaming, !machine.isClosed,
              machine.exchange?.responseQueued == false else {
            waiter.resume(throwing: CancellationError())
            return
        }
        current.bytes += chunk.count
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
        guard let current, current.serial == serial, current.streaming, !machine.isClosed else { return }
        if failed {
            // The head promised a length that will not be delivered: the connection ends.
            abort()
            return
        }
        machine.answerQueued()
        answerMayBeComplete()
    }

    /// Queues `bytes` (never empty) and, unless `flushing` is false because another piece
    /// follows at once, writes what the socket takes.
    private func enqueue(_ bytes: [UInt8], flushing: Bool = true) {
        outbound.append(bytes)
        outBytes += bytes.count
        server.budget.take(bytes.count)
        machine.outboundQueued(now: loop.now)
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
            machine.bytesWritten(n, now: loop.now)
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
            if current?.file == nil { machine.outboundDrained() }
        }
        if let waiter = writeWaiter, canTakeMore(resuming: true) {
            writeWaiter = nil
            waiter.resume()
        }
        updateInterest()
        if outBytes == 0 { answerMayBeComplete() }
    }

    /// Sends what the socket takes of the answer's file region, once the head has left:
    /// `sendfile` from the page cache, a few calls a turn so that one fast client cannot
    /// keep the loop to itself (writability brings it back). False when the connection
    /// ended: an error, or a file shorter than the head announced.
    private func sendFile() -> Bool {
        guard let current, let file = current.file, !current.fileLoading else { return true }
        for _ in 0..<4 {
            let left = file.length - current.fileSent
            guard left > 0 else { break }
            let count = min(left, Self.fileChunkBytes)
            guard Self.isCached(file, at: current.fileSent, count: count) else {
                load(file, at: current.fileSent, count: count, for: current)
                return true
            }
            var offset = off_t(file.offset + current.fileSent)
            let n = Glibc.sendfile(fd, file.descriptor, &offset, count)
            if n > 0 {
                current.fileSent += n
                current.bytes += n
                machine.bytesWritten(n, now: loop.now)
                continue
            }
            let code = errno
            if n < 0 && code == EINTR { continue }
            if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) { return true }
            if n == 0 {
                server.logger.warning("a file region ended before its length; the answer is cut short",
                                      metadata: ["peer": .string(peer), "sent": .string("\(current.fileSent)"),
                                                 "length": .string("\(file.length)")])
            }
            abort()
            return false
        }
        if current.fileSent == file.length {
            current.file = nil
            machine.answerQueued()
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
    private func load(_ file: ObjectFileRegion, at position: Int, count: Int, for current: Current) {
        current.fileLoading = true
        let connection = LoopBound(self, loop: loop)
        let serial = current.serial
        let pieceBytes = Self.loadPieceBytes
        Task {
            // What the read finds wrong, `sendfile` finds again and ends the connection over.
            try? await BlockingWork.run { () throws(PlugboardError) in
                var done = 0
                while done < count {
                    let piece = try file.read(count: min(pieceBytes, count - done), at: position + done)
                    if piece.isEmpty { break }
                    done += piece.count
                }
            }
            connection.execute { $0.fileLoaded(serial: serial) }
        }
    }

    private func fileLoaded(serial: UInt64) {
        guard let current, current.serial == serial, current.fileLoading, !machine.isClosed else { return }
        current.fileLoading = false
        flush()
    }

    static let loadPieceBytes = 256 << 10

    /// The most one `sendfile` call is asked for: what nginx's `sendfile_max_chunk` is by
    /// default, so that one call never holds the loop long.
    static let fileChunkBytes = 2 << 20

    /// Called whenever the answer may be complete: once its last byte has left, the
    /// exchange ends and the connection takes the next request, lingers, or closes.
    private func answerMayBeComplete() {
        guard outBytes == 0 else { return }
        switch machine.outboundEmpty(buffered: buffered, now: loop.now) {
        case .wait:
            return
        case .nextRequest(let exchange):
            finish(exchange)
            resumeReading()
            process()
            // Half closed: nothing more will arrive, so what is left is answered now.
            switch machine.afterLastInput(betweenMessages: decoder.isBetweenMessages, buffered: buffered) {
            case .close?: close()
            case .refuseIncomplete?:
                refuse(decoder.errorAtEndOfInput() ?? HTTPError.badRequest("connection closed before the request ended"))
            case .stopReading?, nil: break
            }
        case .linger(let exchange):
            finish(exchange)
            if machine.linger(now: loop.now) {
                shutdown(fd, Int32(SHUT_WR))
                resumeReading()
            } else {
                close()
            }
        case .close(let exchange):
            finish(exchange)
            close()
        }
    }

    /// The exchange the machine ended: its resources go, the handler hears of it.
    private func finish(_ exchange: ConnectionStateMachine.Exchange) {
        guard let current, current.serial == exchange.serial else { return }
        self.current = nil
        current.channel?.discard()
        handler.completed(PlugboardHTTP.Exchange(
            method: current.head?.method ?? "-", target: current.head?.target ?? "-", status: exchange.status,
            bytes: current.bytes, durationSeconds: loop.clock() - exchange.started, peer: peer, label: current.label))
    }

    /// Answers a request refused at the HTTP level, then lingers and closes.
    private func refuse(_ error: HTTPError) {
        let head = current?.head
        switch machine.refuse(now: loop.now) {
        case .abort:
            current?.channel?.fail(error)
            abort()
        case .answer(let serial):
            if current == nil { current = Current(serial: serial, head: nil) }
            current?.channel?.fail(error)
            current?.task?.cancel()
            writeResponse(handler.refusal(error, head: head), keepAlive: false)
        }
    }

    // MARK: closing

    /// Ends the connection at once: its request's task is cancelled, its body fails.
    func abort() {
        loop.assertInLoop()
        if let current {
            current.task?.cancel()
            current.channel?.fail(HTTPError.badRequest("connection closed before the body ended"))
            if let exchange = machine.exchange, exchange.serial == current.serial, exchange.responseStarted != nil {
                finish(exchange)
            }
        }
        current = nil
        close()
    }

    /// Deregisters, gives back what the connection held, then closes the descriptor: in
    /// this order, so that no one can act on the number once another socket may have it.
    private func close() {
        guard machine.close() else { return }
        if let current {
            current.task?.cancel()
            current.channel?.fail(HTTPError.badRequest("connection closed before the body ended"))
            current.channel?.discard()
        }
        current = nil
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
        guard machine.pauseReading() else { return }
        updateInterest()
    }

    private func resumeReading() {
        guard machine.resumeReading(now: loop.now) else { return }
        updateInterest()
        // Bytes that arrived before the pause are decoded first.
        process()
        if !machine.readPaused { readAvailable() }
    }

    private func updateInterest() {
        guard !machine.isClosed else { return }
        var wanted: UInt32 = machine.readPaused ? 0 : UInt32(PLUGBOARD_EPOLL_IN) | UInt32(PLUGBOARD_EPOLL_RDHUP)
        if outBytes > 0 || (current?.file != nil && current?.fileLoading == false) { wanted |= UInt32(PLUGBOARD_EPOLL_OUT) }
        guard wanted != events else { return }
        events = wanted
        loop.modify(fd, id: id, events: wanted)
    }
}

/// How a request's task reaches its connection: every call is queued on the connection's
/// loop, so the connection itself stays on one thread.
struct ConnectionHandle: Sendable {
    let connection: LoopBound<Connection>
    let serial: UInt64

    func answer(_ response: HTTPResponse) async {
        let serial = self.serial
        // Queued even from the loop's own thread (a task that answered before its first
        // suspension): the loop writes the answers of a batch of events after reading
        // them all. Writing each at once cost more CPU an answer, not less (docs/BENCHMARKS.md,
        // "Instructions a request", tried and left out).
        connection.execute { $0.writeResponseFromTask(response, serial: serial) }
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
        connection.execute { [failed] in $0.streamEnded(failed: failed, serial: serial) }
    }

    private func write(_ chunk: [UInt8]) async throws {
        let (connection, serial) = (self.connection, self.serial)
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            connection.execute { $0.writeChunk(chunk, serial: serial, waiter: waiter) }
        }
    }
}

extension Connection {
    /// The answer ``begin(_:)`` made at once, if its request is still the current one.
    func writeReadyAnswer() {
        loop.assertInLoop()
        guard let current, let answer = current.readyAnswer, let exchange = machine.exchange,
              exchange.serial == current.serial else { return }
        current.readyAnswer = nil
        writeResponse(answer, keepAlive: exchange.keepAliveAsked)
    }

    /// The task's answer, kept alive as the request asked.
    fileprivate func writeResponseFromTask(_ response: HTTPResponse, serial: UInt64) {
        guard let current, current.serial == serial, current.head != nil, let exchange = machine.exchange,
              exchange.serial == serial else { return }
        writeResponse(response, keepAlive: exchange.keepAliveAsked)
    }
}
