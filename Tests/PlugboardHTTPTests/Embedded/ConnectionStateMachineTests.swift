@testable import PlugboardHTTP
import Testing

/// The connection's rules, event by event, without a socket.
@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    static let configuration = ServerConfiguration()
    static let t = Machine.Timeouts(configuration)

    static func head(_ method: String = "GET", framing: BodyFraming = .none, keepAlive: Bool = true,
                     version: HTTPVersion = .http11) -> RequestHead {
        RequestHead(method: method, target: "/x", version: version, headers: HTTPHeaders(), framing: framing,
                    keepAlive: keepAlive, expectsContinue: false)
    }

    /// A machine with a request read to its end (a GET, unless `head` says otherwise).
    static func answering(_ head: RequestHead = head(), now: Double = 0, timeouts: Machine.Timeouts = t) -> Machine {
        var m = Machine(now: now, timeouts: timeouts)
        let r1 = m.bytesRead(40, now: now)
        #expect(r1 == .decode)
        _ = m.headDecoded(head, now: now)
        m.requestDecoded()
        return m
    }

    @Test func aNewConnection_closesAfterTheFirstByteTimeout_notBefore() {
        var m = Machine(now: 0, timeouts: Self.t)
        guard case .none = m.tick(now: Self.t.firstByte - 0.1) else { Issue.record("closed early"); return }
        guard case .close = m.tick(now: Self.t.firstByte + 0.1) else { Issue.record("not closed"); return }
    }

    @Test func aHeadThatDoesNotArriveInTime_isRefusedWith408() {
        var m = Machine(now: 0, timeouts: Self.t)
        let r2 = m.bytesRead(5, now: 1)
        #expect(r2 == .decode)
        #expect(m.phase == .head(started: 1))
        guard case .refuse(let error) = m.tick(now: 1 + Self.t.header + 0.1) else { Issue.record("not refused"); return }
        #expect(error.status == 408)
        let r3 = m.refuse(now: 20)
        #expect(r3 == .answer(serial: 1))
        #expect(m.phase == .answering)
    }

    @Test func aKeptAliveAnswer_takesTheNextRequest_andTheIdleTimeoutThenApplies() {
        var m = Self.answering()
        let start = m.answerStarting(status: 200, contentLength: 5, keepAliveWanted: true, buffered: false, now: 1)
        #expect(start == .init(keepAlive: true, isHead: false, version: .http11))
        // A second answer for the same request is not written.
        let r4 = m.answerStarting(status: 500, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r4 == nil)
        m.answerQueued()
        guard case .nextRequest(let finished) = m.outboundEmpty(buffered: false, now: 2) else { Issue.record("did not go on"); return }
        #expect(finished.status == 200 && finished.serial == 1)
        #expect(m.phase == .idle(since: 2, first: false))
        #expect(!m.isCurrent(1))
        guard case .none = m.tick(now: 2 + Self.t.idle - 0.1) else { Issue.record("closed early"); return }
        guard case .close = m.tick(now: 2 + Self.t.idle + 0.1) else { Issue.record("idle connection kept"); return }
    }

    @Test func anAnswerWhoseBytesHaveNotLeft_waits() {
        var m = Self.answering()
        _ = m.answerStarting(status: 200, contentLength: 5, keepAliveWanted: true, buffered: false, now: 1)
        // Streaming: the head left, the body has not been queued to its end.
        let r5 = m.outboundEmpty(buffered: false, now: 1)
        #expect(r5 == .wait)
        m.answerQueued()
        guard case .nextRequest = m.outboundEmpty(buffered: false, now: 1) else { Issue.record("did not go on"); return }
    }

    @Test func anAnswerBeforeTheBodyEnded_closesTheConnectionAfterALinger() {
        var m = Machine(now: 0, timeouts: Self.t)
        _ = m.bytesRead(100, now: 0)
        _ = m.headDecoded(Self.head("PUT", framing: .length(1000)), now: 0)
        m.bodyStarted(now: 0)
        let start = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(start?.keepAlive == false)
        m.answerQueued()
        guard case .linger = m.outboundEmpty(buffered: false, now: 1) else { Issue.record("not lingering"); return }
        let r6 = m.linger(now: 1)
        #expect(r6)
        #expect(m.phase == .lingering(until: 1 + Machine.lingerSeconds, drained: 0))
        let r7 = m.bytesRead(1000, now: 1.5)
        #expect(r7 == .drop)
        let r8 = m.bytesRead(Machine.lingerBytes, now: 1.5)
        #expect(r8 == .close)
        guard case .close = m.tick(now: 1 + Machine.lingerSeconds + 0.1) else { Issue.record("linger did not end"); return }
    }

    @Test func aClosingStatus_endsTheConnectionWhateverTheHandlerAsked() {
        var m = Self.answering()
        let r9 = m.answerStarting(status: 400, contentLength: 3, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r9?.keepAlive == false)
        m.answerQueued()
        guard case .linger(let e) = m.outboundEmpty(buffered: false, now: 1) else { Issue.record("not lingering"); return }
        #expect(e.status == 400)
    }

    @Test func aHeadRequest_isFramedWithoutABody_andItsDeadlineCountsNoBytes() {
        var m = Self.answering(Self.head("HEAD"))
        let start = m.answerStarting(status: 200, contentLength: 1 << 30, keepAliveWanted: true, buffered: false, now: 0)
        #expect(start?.isHead == true)
        #expect(m.exchange?.deadline == Self.t.write)
    }

    @Test func stopping_closesAnIdleConnectionNow_andABusyOneAfterItsAnswer() {
        var idle = Machine(now: 0, timeouts: Self.t)
        let r10 = idle.stop()
        #expect(r10)
        var busy = Self.answering()
        let r11 = busy.stop()
        #expect(!r11)
        let r12 = busy.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r12?.keepAlive == false)
        busy.answerQueued()
        guard case .close = busy.outboundEmpty(buffered: false, now: 1) else { Issue.record("not closed"); return }
    }

    @Test func aHalfCloseWhileAnswering_cancelsTheHandler_andTheAnswerClosesTheConnection() {
        var m = Self.answering()
        let r13 = m.endOfInput(buffered: false)
        #expect(r13 == .stopReading(cancelHandler: true))
        #expect(m.readPaused)
        let r14 = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r14?.keepAlive == false)
        m.answerQueued()
        guard case .close = m.outboundEmpty(buffered: false, now: 1) else { Issue.record("not closed"); return }
        // Reading does not come back once the client has closed.
        let r15 = m.resumeReading(now: 2)
        #expect(!r15)
    }

    @Test func aHalfCloseAfterPipelinedRequests_answersEachThenCloses() {
        var m = Self.answering()
        let r16 = m.endOfInput(buffered: true)
        #expect(r16 == .stopReading(cancelHandler: false))
        let r17 = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: true, now: 1)
        #expect(r17?.keepAlive == true)
        m.answerQueued()
        guard case .nextRequest = m.outboundEmpty(buffered: true, now: 1) else { Issue.record("did not go on"); return }
        // The last pipelined request taken, nothing is left: the connection closes.
        _ = m.headDecoded(Self.head(), now: 1)
        m.requestDecoded()
        #expect(m.afterLastInput(betweenMessages: true, buffered: false) == nil)
        let r18 = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r18?.keepAlive == false)
        m.answerQueued()
        guard case .close = m.outboundEmpty(buffered: false, now: 1) else { Issue.record("not closed"); return }
    }

    @Test func aHalfCloseInsideAPipelinedRequest_refusesTheIncompleteOne() {
        var m = Self.answering()
        _ = m.endOfInput(buffered: true)
        _ = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: true, now: 1)
        m.answerQueued()
        guard case .nextRequest = m.outboundEmpty(buffered: true, now: 1) else { Issue.record("did not go on"); return }
        // The decoder found half a head and no more input.
        _ = m.bytesRead(0, now: 1)
        #expect(m.afterLastInput(betweenMessages: false, buffered: true) == .refuseIncomplete)
        let r19 = m.endOfInput(buffered: true)
        #expect(r19 == .refuseIncomplete)
    }

    @Test func endOfInput_outsideARequest_closes_insideOne_refuses() {
        var idle = Machine(now: 0, timeouts: Self.t)
        let r20 = idle.endOfInput(buffered: false)
        #expect(r20 == .close)
        var inHead = Machine(now: 0, timeouts: Self.t)
        _ = inHead.bytesRead(3, now: 0)
        let r21 = inHead.endOfInput(buffered: true)
        #expect(r21 == .refuseIncomplete)
    }

    @Test func aRefusalAfterTheAnswerBegan_aborts() {
        var m = Self.answering()
        _ = m.answerStarting(status: 200, contentLength: 100, keepAliveWanted: true, buffered: false, now: 1)
        let r22 = m.refuse(now: 1)
        #expect(r22 == .abort)
    }

    @Test func aStalledBody_isRefused_unlessTheServerPausedReadingIt() {
        var m = Machine(now: 0, timeouts: Self.t)
        _ = m.bytesRead(100, now: 0)
        _ = m.headDecoded(Self.head("PUT", framing: .length(1 << 20)), now: 0)
        m.bodyStarted(now: 0)
        let r23 = m.pauseReading()
        #expect(r23)
        let r24 = m.pauseReading()
        #expect(!r24)
        guard case .none = m.tick(now: Self.t.body + 1) else { Issue.record("a paused body was refused"); return }
        let r25 = m.resumeReading(now: Self.t.body + 1)
        #expect(r25)
        guard case .refuse(let error) = m.tick(now: 2 * Self.t.body + 2) else { Issue.record("stall not refused"); return }
        #expect(error.status == 408)
    }

    @Test func aClientThatReadsNothingOfItsAnswer_isDroppedAfterTheWriteTimeout_orForItsRate() {
        // A write timeout shorter than the rate's window (10 s) drops first.
        var short = Self.t
        short.write = 8
        var m = Self.answering(timeouts: short)
        _ = m.answerStarting(status: 200, contentLength: 1 << 20, keepAliveWanted: true, buffered: false, now: 1)
        m.outboundQueued(now: 1)
        guard case .none = m.tick(now: 1 + short.write - 0.1) else { Issue.record("dropped early"); return }
        guard case .drop(let reason) = m.tick(now: 1 + short.write + 0.1) else { Issue.record("not dropped"); return }
        #expect(reason.contains("read nothing"))
        // A longer one: the rate, once its window is full.
        var slow = Self.answering()
        _ = slow.answerStarting(status: 200, contentLength: 1 << 20, keepAliveWanted: true, buffered: false, now: 1)
        slow.outboundQueued(now: 1)
        guard case .none = slow.tick(now: 1 + 10.5) else { Issue.record("dropped before the window was full"); return }
        guard case .drop(let why) = slow.tick(now: 1 + 11.1) else { Issue.record("not dropped for its rate"); return }
        #expect(why.contains("bytes per second"))
        // Bytes leaving in time keep it.
        var reading = Self.answering()
        _ = reading.answerStarting(status: 200, contentLength: 1 << 20, keepAliveWanted: true, buffered: false, now: 1)
        reading.outboundQueued(now: 1)
        var now = 1.0
        while now < 1 + Self.t.write + 2 {
            now += 0.25
            reading.bytesWritten(1 << 16, now: now)
            let action = reading.tick(now: now)
            guard case .none = action else { Issue.record("a reading client was dropped at \(now): \(action)"); return }
        }
    }

    @Test func aPipelinedRequestWaitsForTheAnswer_andOverAHeadsWorthReadingPauses() {
        let m = Self.answering()
        #expect(m.decodeAction(buffered: 100, headCapacity: 8192) == .wait)
        #expect(m.decodeAction(buffered: 9000, headCapacity: 8192) == .pauseReading)
        #expect(Machine(now: 0, timeouts: Self.t).decodeAction(buffered: 9000, headCapacity: 8192) == .decode)
    }

    @Test func aClosedConnection_staysClosed() {
        var m = Self.answering()
        let r26 = m.close()
        #expect(r26)
        let r27 = m.close()
        #expect(!r27)
        #expect(m.exchange == nil)
        let r28 = m.answerStarting(status: 200, contentLength: 0, keepAliveWanted: true, buffered: false, now: 1)
        #expect(r28 == nil)
        guard case .none = m.tick(now: 1_000) else { Issue.record("a closed connection acted"); return }
    }
}
