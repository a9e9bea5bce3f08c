#if canImport(Glibc)
import Glibc
#endif
import PlugboardIPC
import Testing

/// The socket transport between two ends of one pair, in one process: frames whole,
/// descriptors handed over, the end seen, hostile bytes refused.
@Suite struct SocketTransportTests {
    @Test func aFrameArrivesWhole_withItsKindStreamAndPayload() throws {
        let (host, childEnd) = try SocketTransport.pair()
        let child = SocketTransport(socket: childEnd)
        let payload = (0..<Frame.maxPayload).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try host.send(Frame(.chunk, stream: 0xDEAD_BEEF, payload: payload))
        try host.send(Frame(.end, stream: 7))
        let first = try #require(try child.receive())
        #expect(first.kind == .chunk && first.stream == 0xDEAD_BEEF && first.payload == payload && first.descriptor == -1)
        let second = try #require(try child.receive())
        #expect(second.kind == .end && second.stream == 7 && second.payload.isEmpty)
    }

    @Test func aPayloadOverTheMostIsRefusedBeforeItIsSent() throws {
        let (host, _) = try SocketTransport.pair()
        #expect(throws: IPCError.self) { try host.send(Frame(.chunk, stream: 1, payload: [UInt8](repeating: 0, count: Frame.maxPayload + 1))) }
    }

    @Test func aDescriptorTravelsWithItsFrame_andTheSenderKeepsItsOwn() throws {
        let (host, childEnd) = try SocketTransport.pair()
        let child = SocketTransport(socket: childEnd)
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]) }
        try child.send(Frame(.answer, stream: 3, payload: [1], descriptor: pipeEnds[1]))
        let frame = try #require(try host.receive())
        #expect(frame.descriptor >= 0 && frame.descriptor != pipeEnds[1])
        // Both copies write into the one pipe.
        #expect(write(frame.descriptor, "a", 1) == 1)
        #expect(write(pipeEnds[1], "b", 1) == 1)
        close(frame.descriptor)
        close(pipeEnds[1])
        var read2 = [UInt8](repeating: 0, count: 4)
        #expect(read(pipeEnds[0], &read2, 4) == 2)
        #expect(Array(read2.prefix(2)) == Array("ab".utf8))
    }

    @Test func thePeersEndIsNil_andCloseWakesAWaitingReader() async throws {
        let (host, childEnd) = try SocketTransport.pair()
        let child = SocketTransport(socket: childEnd)
        child.close()
        #expect(try host.receive() == nil)
        // A reader blocked in receive is woken by close on its own side.
        let (other, otherChild) = try SocketTransport.pair()
        _ = otherChild
        let woke = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            let thread = ReaderThread { done.resume(returning: (try? other.receive()) == nil) }
            thread.start()
            other.close()
        }
        #expect(woke)
        close(otherChild)
    }

    @Test func aMessageShorterThanAHeaderIsMalformed() throws {
        var fds: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        let host = SocketTransport(socket: fds[0])
        defer { close(fds[1]) }
        #expect(write(fds[1], [UInt8(2), 0], 2) == 2)
        #expect(throws: IPCError.malformed("expected at least 5 bytes of header, found 2")) { try host.receive() }
    }
}

/// A plain thread for a blocking receive, so that the test's task does not block the pool.
private final class ReaderThread: @unchecked Sendable {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func start() {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<ReaderThread>.fromOpaque(raw!).takeRetainedValue()
            me.body()
            return nil
        }, box)
        pthread_detach(thread)
    }
}
