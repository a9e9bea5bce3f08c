/// What an HTTP/1.1 connection decides, as a value: its phase, the protocol state of the
/// request in progress, and the clocks its deadlines read. Each event the connection sees
/// (bytes read, a head decoded, an answer written, end of input, a tick) is a mutating
/// call that returns what the connection must do at once: an action, an exchange, whether
/// the step happened, or nothing where the event only records what a later one decides
/// on (docs/ARCHITECTURE.md, "The server core"). The ``Connection`` that owns it does the system calls,
/// holds the buffers and runs the handler. In SwiftNIO's shape (its HTTP/1 and
/// connection-pool state machines): every rule about keep-alive, pipelining, half closes,
/// lingering and timeouts is here, and tested here without a socket
/// (`ConnectionStateMachineTests`).
///
/// No system call, no allocation beyond the transfer rates' windows, no reference to the
/// loop: the caller passes the loop's time.
struct ConnectionStateMachine {
    enum Phase: Equatable {
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

    /// The protocol state of the request in progress.
    struct Exchange: Equatable {
        /// Tells this request's calls from a late one of an earlier request's task.
        let serial: UInt64
        let started: Double
        let isHead: Bool
        let hasBody: Bool
        let version: HTTPVersion
        let keepAliveAsked: Bool
        /// The decoder has passed the request's last byte.
        var requestEnded = false
        /// When the answer's head was queued.
        var responseStarted: Double?
        /// The answer's last byte has been queued (it may not have left yet).
        var responseQueued = false
        var keepAlive = false
        var status = 0
        /// The answer must have left by then (its size at the slowest rate allowed).
        var deadline: Double?
    }

    /// How the connection was configured: its timeouts and rates. These six values, not
    /// the whole ``ServerConfiguration``, are what every connection keeps.
    struct Timeouts {
        var firstByte: Double
        var idle: Double
        var header: Double
        var body: Double
        var write: Double
        var minBytesPerSecond: Int

        init(_ c: ServerConfiguration) {
            firstByte = c.firstByteTimeoutSeconds
            idle = c.idleTimeoutSeconds
            header = c.headerTimeoutSeconds
            body = c.bodyTimeoutSeconds
            write = c.writeTimeoutSeconds
            minBytesPerSecond = c.minBodyBytesPerSecond
        }
    }

    /// What a lingering connection drains at most before it closes anyway.
    static let lingerBytes = 4 << 20
    static let lingerSeconds = 2.0

    private(set) var phase: Phase
    private(set) var exchange: Exchange?
    let timeouts: Timeouts
    /// Reading is held back: the body's reader is behind, or the buffer waits for the
    /// current request to end, or the client sent all it will.
    private(set) var readPaused = false
    private(set) var peerClosed = false
    private(set) var stopping = false
    /// The current request's bytes arrived before the previous answer ended: the client
    /// pipelines.
    private var pipelined = false
    /// The client half-closed after pipelining: every request it sent is answered, and
    /// the connection closes after the last.
    private(set) var answeringToTheEnd = false
    private var serial: UInt64 = 0
    private var readRate: TransferRate
    private var writeRate: TransferRate
    /// When the body last made progress.
    private var lastBodyByte = 0.0
    /// When answer bytes began waiting to leave (nil when none wait), and when some last left.
    private var outboundSince: Double?
    private var lastWrite = 0.0

    init(now: Double, timeouts: Timeouts) {
        phase = .idle(since: now, first: true)
        self.timeouts = timeouts
        readRate = TransferRate(now: now, windowSeconds: timeouts.body)
        writeRate = TransferRate(now: now)
    }

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Whether `serial` names the request in progress (a task's late call does not).
    func isCurrent(_ serial: UInt64) -> Bool { exchange?.serial == serial }

    // MARK: time

    enum TickAction {
        case none
        case close
        /// Answer with this error, then linger and close.
        case refuse(HTTPError)
        /// A client that does not read its answer: log why and end the connection at once.
        case drop(reason: String)
    }

    /// The periodic deadline check.
    mutating func tick(now: Double) -> TickAction {
        let t = timeouts
        switch phase {
        case .idle(let since, let first):
            if stopping || now - since > (first ? t.firstByte : t.idle) { return .close }
        case .head(let started):
            if now - started > t.header {
                return .refuse(HTTPError.timeout("request head not received in time",
                                                 detail: "The request line and headers must arrive within \(t.header) s."))
            }
        case .body:
            guard !readPaused else { break }
            if now - lastBodyByte > t.body {
                return .refuse(HTTPError.timeout("request body stalled", detail: "No byte arrived for \(t.body) s."))
            } else if readRate.isBelow(t.minBytesPerSecond, now: now) {
                return .refuse(HTTPError.timeout("request body too slow",
                    detail: "Fewer than \(t.minBytesPerSecond) bytes per second over the last \(readRate.window) s."))
            }
        case .lingering(let until, _):
            if now > until { return .close }
        case .answering, .closed:
            break
        }
        return deliveryCheck(now: now)
    }

    /// A client that does not read its answer: dropped when the socket took too little
    /// over the rate window, when nothing left for the write timeout, or when the whole
    /// answer has taken longer than its size allows.
    private mutating func deliveryCheck(now: Double) -> TickAction {
        guard outboundSince != nil, !isClosed else { return .none }
        let t = timeouts
        if now - lastWrite > t.write {
            return .drop(reason: "read nothing of its answer for \(t.write) s")
        } else if writeRate.isBelow(t.minBytesPerSecond, now: now) {
            return .drop(reason: "read its answer at fewer than \(t.minBytesPerSecond) bytes per second over \(writeRate.window) s")
        } else if let deadline = exchange?.deadline, now > deadline {
            return .drop(reason: "took longer to read its answer than its size allows")
        }
        return .none
    }

    /// The server stops: true when the connection is idle and closes now; a busy one
    /// closes after its answer.
    mutating func stop() -> Bool {
        stopping = true
        if case .idle = phase { return true }
        return false
    }

    // MARK: reading

    enum ReadAction: Equatable {
        /// Keep the bytes and decode them.
        case decode
        /// Lingering: throw them away.
        case drop
        /// Lingering, and the client sent more than a linger reads: close.
        case close
    }

    /// `count` bytes arrived.
    mutating func bytesRead(_ count: Int, now: Double) -> ReadAction {
        switch phase {
        case .lingering(let until, let drained):
            let total = drained + count
            if total > Self.lingerBytes { return .close }
            phase = .lingering(until: until, drained: total)
            return .drop
        case .idle:
            phase = .head(started: now)
        case .body:
            readRate.add(count, now: now)
            lastBodyByte = now
        case .head, .answering, .closed:
            break
        }
        return .decode
    }

    enum DecodeAction: Equatable {
        case decode
        /// A pipelined request waits for this answer and its bytes exceed a head's worth:
        /// stop reading until the answer is written.
        case pauseReading
        case wait
    }

    /// Whether the buffered input may be decoded now; `buffered` bytes are unread and a
    /// head holds at most `headCapacity`.
    func decodeAction(buffered: Int, headCapacity: Int) -> DecodeAction {
        switch phase {
        case .head, .idle, .body: return .decode
        case .answering: return buffered > headCapacity ? .pauseReading : .wait
        case .lingering, .closed: return .wait
        }
    }

    /// A request's head was decoded; the phase becomes `.body` (the decoder's end of the
    /// request comes next, at once for one without a body). Returns its exchange.
    mutating func headDecoded(_ head: RequestHead, now: Double) -> Exchange {
        let started: Double
        if case .head(let s) = phase { started = s } else { started = now }
        serial += 1
        let exchange = Exchange(serial: serial, started: started, isHead: head.method == "HEAD",
                                hasBody: head.framing != .none && head.framing != .length(0),
                                version: head.version, keepAliveAsked: head.keepAlive)
        self.exchange = exchange
        phase = .body
        return exchange
    }

    /// The request's body will not be read (the handler refused it at its head).
    mutating func bodyLeftUnread() {
        phase = .answering
    }

    /// The body begins: its clocks start now.
    mutating func bodyStarted(now: Double) {
        readRate.restart(now: now)
        lastBodyByte = now
    }

    /// The decoder passed the request's last byte.
    mutating func requestDecoded() {
        exchange?.requestEnded = true
        phase = .answering
    }

    /// Reading stops until ``resumeReading(now:)``; false when it already had.
    mutating func pauseReading() -> Bool {
        guard !readPaused else { return false }
        readPaused = true
        return true
    }

    /// Reading goes on; false when it cannot (it was not paused, the peer closed, the
    /// connection closed).
    mutating func resumeReading(now: Double) -> Bool {
        guard readPaused, !peerClosed, !isClosed else { return false }
        readPaused = false
        readRate.restart(now: now)
        lastBodyByte = now
        return true
    }

    enum EndOfInputAction: Equatable {
        case close
        /// The request it was inside is incomplete: refuse it.
        case refuseIncomplete
        /// Answering: stop reading; cancel the handler when `cancelHandler`.
        case stopReading(cancelHandler: Bool)
    }

    /// The client sent all it will (`buffered`: unread bytes of its requests are here).
    mutating func endOfInput(buffered: Bool) -> EndOfInputAction {
        peerClosed = true
        switch phase {
        case .idle, .closed, .lingering:
            return .close
        case .head, .body:
            return .refuseIncomplete
        case .answering:
            // A half close, or the client went away, which look the same until an answer
            // is written. A client that pipelined has said what it wants (every request it
            // sent, read in order: `printf ... | nc -N` does so), so each is answered before
            // the connection closes. Otherwise it may still read an answer that has begun,
            // after which the connection ends; a request still being handled is cancelled
            // (as nginx and Go do), and its answer, if any, is still written.
            readPaused = true
            if pipelined || buffered {
                answeringToTheEnd = true
                return .stopReading(cancelHandler: false)
            }
            return .stopReading(cancelHandler: exchange != nil && exchange?.responseStarted == nil)
        }
    }

    // MARK: writing

    /// How an answer that is about to be queued is framed.
    struct AnswerStart: Equatable {
        var keepAlive: Bool
        var isHead: Bool
        var version: HTTPVersion
    }

    /// An answer with `status` is about to be queued, the handler asking to keep the
    /// connection alive when `keepAliveWanted`; nil when the request in progress has an
    /// answer already (or there is none). `buffered`: bytes of a next request are here.
    mutating func answerStarting(status: Int, contentLength: Int, keepAliveWanted: Bool,
                                 buffered: Bool, now: Double) -> AnswerStart? {
        guard var exchange, !exchange.responseQueued, exchange.responseStarted == nil else { return nil }
        // An answer given while the body is still arriving (the handler did not read it)
        // ends the connection: nobody will read the rest, and waiting for it would hold
        // the connection forever.
        let bodyPending = !exchange.requestEnded && exchange.hasBody
        // After a half close, only a request whose successor is already here keeps it open.
        let inputLeft = !peerClosed || (answeringToTheEnd && buffered)
        let keepAlive = keepAliveWanted && !HTTPError.isClosing(status) && !stopping && inputLeft && !bodyPending
        exchange.keepAlive = keepAlive
        exchange.status = status
        exchange.responseStarted = now
        let length = exchange.isHead ? 0 : contentLength
        exchange.deadline = now + timeouts.write + Double(length) / Double(max(1, timeouts.minBytesPerSecond))
        self.exchange = exchange
        return AnswerStart(keepAlive: keepAlive, isHead: exchange.isHead, version: exchange.version)
    }

    /// The answer's last byte is queued (it may not have left yet).
    mutating func answerQueued() {
        exchange?.responseQueued = true
    }

    /// Answer bytes were queued to leave.
    mutating func outboundQueued(now: Double) {
        guard outboundSince == nil else { return }
        outboundSince = now
        lastWrite = now
        writeRate.restart(now: now)
    }

    /// The socket took `count` bytes.
    mutating func bytesWritten(_ count: Int, now: Double) {
        lastWrite = now
        writeRate.add(count, now: now)
    }

    /// Nothing waits to leave.
    mutating func outboundDrained() {
        outboundSince = nil
    }

    enum AfterAnswer: Equatable {
        /// Not finished: its last byte is not queued, or the request is not read to its end.
        case wait
        /// Finished; the connection takes the next request.
        case nextRequest(Exchange)
        /// Finished; the connection shuts its side and drains what the client still sends.
        case linger(Exchange)
        /// Finished; the connection closes.
        case close(Exchange)
    }

    /// Every queued byte has left: when the answer is complete, the exchange ends and the
    /// connection goes on, lingers or closes. `buffered`: bytes of a next request are here.
    mutating func outboundEmpty(buffered: Bool, now: Double) -> AfterAnswer {
        guard let exchange, exchange.responseQueued else { return .wait }
        // A kept-alive answer given before the request's end waits for it (the decoder is
        // one event away for a request without a body).
        if exchange.keepAlive && !exchange.requestEnded, case .body = phase { return .wait }
        self.exchange = nil
        if exchange.keepAlive && exchange.requestEnded && !stopping && (!peerClosed || answeringToTheEnd) {
            pipelined = buffered
            phase = .idle(since: now, first: false)
            return .nextRequest(exchange)
        }
        // Unread bytes at close() would reset the connection, and the client could lose
        // the answer it has not read yet.
        if !exchange.requestEnded || buffered || HTTPError.isClosing(exchange.status) { return .linger(exchange) }
        return .close(exchange)
    }

    /// After the next request was taken from the buffer of a half-closed client: what is
    /// left is all there will be. `betweenMessages`: the decoder stopped at a request's
    /// boundary.
    func afterLastInput(betweenMessages: Bool, buffered: Bool) -> EndOfInputAction? {
        guard answeringToTheEnd else { return nil }
        switch phase {
        case .idle where betweenMessages && !buffered: return .close
        // A request cut short by the close: its head or its body is incomplete.
        case .idle, .head, .body: return .refuseIncomplete
        case .answering, .lingering, .closed: return nil
        }
    }

    enum RefuseAction: Equatable {
        /// The answer has begun: nothing more can be said on this connection.
        case abort
        /// Write the refusal (the exchange's serial, made now if there was no request).
        case answer(serial: UInt64)
    }

    /// The request in progress, or one whose head could not be read, is refused at the
    /// HTTP level.
    mutating func refuse(now: Double) -> RefuseAction {
        if exchange == nil {
            serial += 1
            exchange = Exchange(serial: serial, started: now, isHead: false, hasBody: false,
                                version: .http11, keepAliveAsked: false)
        }
        if exchange?.responseStarted != nil { return .abort }
        phase = .answering
        return .answer(serial: serial)
    }

    /// Shuts the connection's side after an answer: false when the client closed already
    /// (the caller closes instead).
    mutating func linger(now: Double) -> Bool {
        guard !peerClosed else { return false }
        phase = .lingering(until: now + Self.lingerSeconds, drained: 0)
        return true
    }

    /// The connection ends; false when it had already.
    mutating func close() -> Bool {
        guard !isClosed else { return false }
        phase = .closed
        exchange = nil
        return true
    }
}
