#if canImport(Glibc)
import Glibc
#endif
import CPlugboardIPC
import PlugboardConcurrency
@testable import PlugboardIPC
import PlugboardTestSupport
import Testing

/// The ring transport between two ends of one pair in one process (each end maps the memfd
/// as the child would), and against a real child process for both transports: frames
/// whole, order kept, waits that end, and a peer that scribbles on the mapping refused.
@Suite struct RingTransportTests {
    /// The smallest ring, so that a few frames wrap it and fill it.
    static let small = RingTransport.Configuration(ringBytes: RingLayout.minimumRingBytes)

    static func pair(_ configuration: RingTransport.Configuration = small) throws -> (host: RingTransport, child: RingTransport,
                                                                                      mapping: SharedMapping) {
        let (host, descriptors) = try RingTransport.pair(configuration: configuration)
        let mapping = try #require(SharedMapping(memfd: descriptors[0], ringBytes: configuration.ringBytes))
        let child = try RingTransport(attaching: descriptors, configuration: configuration)
        return (host, child, mapping)
    }

    /// Bytes that differ from their neighbours (a wrapped copy put back in the wrong order
    /// shows), made once: ThreadSanitizer makes a byte-by-byte map slow.
    static let patternSource = (0..<(Frame.maxPayload + 256)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 8) }

    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        let start = (seed &* 7) & 255
        return Array(patternSource[start..<(start + count)])
    }

    /// A frame's body of one byte value, its own (a torn frame mixes values), and its own
    /// length: cheap enough for thousands of frames under ThreadSanitizer.
    static func fill(thread: Int, sequence: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(truncatingIfNeeded: thread &* 37 &+ sequence), count: (sequence &* 7919 &+ thread &* 13) % 3000)
    }

    /// A pipe whose read end does not block: a byte missing is a failure, not a hang.
    static func pipeEnds() throws -> [Int32] {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        return ends
    }

    @Test func framesArriveWhole_acrossTheRingsEnd() throws {
        let (host, child, _) = try Self.pair()
        // Sizes that put headers and payloads across the end at many offsets, with frames
        // of the most payload among them.
        for index in 0..<600 {
            let size = index % 50 == 7 ? Frame.maxPayload : (index &* 397) % 5000
            let payload = Self.pattern(size, seed: index)
            try host.send(Frame(.chunk, stream: UInt32(index) &* 0x0101_0101, payload: payload))
            let frame = try #require(try child.receive())
            #expect(frame.kind == .chunk && frame.stream == UInt32(index) &* 0x0101_0101 && frame.descriptor == -1)
            #expect(frame.payload == payload, "frame \(index) of \(size) bytes")
        }
        try child.send(Frame(.end, stream: 9))
        let back = try #require(try host.receive())
        #expect(back.kind == .end && back.stream == 9 && back.payload.isEmpty)
    }

    @Test func aPayloadOverTheMostIsRefused_andARingSizeOutOfRangeToo() throws {
        let (host, _, _) = try Self.pair()
        #expect(throws: IPCError.self) { try host.send(Frame(.chunk, stream: 1, payload: [UInt8](repeating: 0, count: Frame.maxPayload + 1))) }
        for bytes in [RingLayout.minimumRingBytes / 2, RingLayout.minimumRingBytes + 8, RingLayout.maximumRingBytes * 2] {
            #expect(throws: IPCError.self) { try RingTransport.pair(configuration: .init(ringBytes: bytes)) }
        }
    }

    @Test func manySendersOnManyThreads_noFrameLostDuplicatedOrTorn() async throws {
        let (host, child, _) = try Self.pair()
        let threads = 8, perThread = 1500
        let failures = LockedValueBox<[String]>([])
        for thread in 0..<threads {
            let started = Threads.spawn {
                for sequence in 0..<perThread {
                    var payload: [UInt8] = [UInt8(thread)]
                    withUnsafeBytes(of: UInt32(sequence).littleEndian) { payload.append(contentsOf: $0) }
                    payload += Self.fill(thread: thread, sequence: sequence)
                    do { try child.send(Frame(.chunk, stream: UInt32(thread), payload: payload)) } catch {
                        failures.withLock { $0.append("thread \(thread) frame \(sequence): \(error)") }
                        return
                    }
                }
            }
            #expect(started)
        }
        let problems = await OwnThread.run { () -> [String] in
            var next = [Int](repeating: 0, count: threads)
            var problems: [String] = []
            for _ in 0..<(threads * perThread) {
                guard let frame = try? host.receive() else { return ["the reader ended early"] }
                let thread = Int(frame.stream)
                guard thread < threads, frame.payload.count >= 5, frame.payload[0] == UInt8(thread) else {
                    problems.append("a frame of stream \(frame.stream) with \(frame.payload.count) bytes")
                    continue
                }
                let sequence = Int(frame.payload[1]) | Int(frame.payload[2]) << 8 | Int(frame.payload[3]) << 16 | Int(frame.payload[4]) << 24
                if sequence != next[thread] { problems.append("thread \(thread): expected frame \(next[thread]), found \(sequence)") }
                next[thread] = sequence + 1
                if Array(frame.payload.dropFirst(5)) != Self.fill(thread: thread, sequence: sequence) {
                    problems.append("thread \(thread) frame \(sequence) is torn")
                }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(failures.withLock { $0 }.isEmpty)
    }

    @Test func descriptorsArriveWithTheirFrames_inOrder() throws {
        let (host, child, _) = try Self.pair()
        var pipes: [[Int32]] = []
        for _ in 0..<10 {
            pipes.append(try Self.pipeEnds())
        }
        defer { for ends in pipes { close(ends[0]); close(ends[1]) } }
        for index in 0..<20 {
            try child.send(Frame(.answer, stream: UInt32(index), payload: [UInt8(index)], descriptor: index % 2 == 0 ? pipes[index / 2][1] : -1))
        }
        for index in 0..<20 {
            let frame = try #require(try host.receive())
            #expect(frame.stream == UInt32(index) && frame.payload == [UInt8(index)])
            if index % 2 == 1 {
                #expect(frame.descriptor == -1)
                continue
            }
            #expect(frame.descriptor >= 0 && frame.descriptor != pipes[index / 2][1])
            // The received copy writes into the pipe that was sent with this frame.
            #expect(write(frame.descriptor, "x", 1) == 1)
            close(frame.descriptor)
            var byte: UInt8 = 0
            #expect(read(pipes[index / 2][0], &byte, 1) == 1)
        }
    }

    @Test func thePeersCloseEndsTheStreamAfterItsLastFrame() throws {
        let (host, child, _) = try Self.pair()
        try child.send(Frame(.answer, stream: 1, payload: [1, 2, 3]))
        child.close()
        #expect(try host.receive()?.payload == [1, 2, 3])
        #expect(try host.receive() == nil)
        #expect(try host.receive() == nil)
        #expect(throws: IPCError.closed) { try host.send(Frame(.ping)) }
        #expect(throws: IPCError.closed) { try child.send(Frame(.ping)) }
    }

    @Test func aPeerThatGoesAwayWithoutClosing_isSeenByTheSocketsHangUp() async throws {
        let configuration = RingTransport.Configuration(ringBytes: RingLayout.minimumRingBytes, spinNanoseconds: 0)
        let (host, descriptors) = try RingTransport.pair(configuration: configuration)
        do {
            let child = try RingTransport(attaching: descriptors, configuration: configuration)
            try child.send(Frame(.pong, payload: [7]))
            // Dropped here: the mapping unmapped and the socket closed, as by a death.
        }
        let frames = await OwnThread.run { () -> [Frame?] in [try? host.receive(), try? host.receive()] }
        #expect(frames.count == 2 && frames[0]?.payload == [7] && frames[1] == nil)
        // As a socket's send would after the peer died, not a frame into a ring nobody reads.
        #expect(throws: IPCError.closed) { try host.send(Frame(.ping)) }
    }

    @Test func closeWakesASleepingReader() async throws {
        // The hang-up check far beyond the test's bound: only close can end the wait.
        let configuration = RingTransport.Configuration(ringBytes: RingLayout.minimumRingBytes, spinNanoseconds: 0,
                                                        hangUpCheckNanoseconds: 600_000_000_000)
        let (host, child, mapping) = try Self.pair(configuration)
        // The child's end lives to the test's end: released early, its socket's hang-up
        // would end the reader's wait before it ever slept.
        defer { withExtendedLifetime(child) {} }
        let reader = OwnThread.start { (try? host.receive()) == nil }
        #expect(await mapping.waitUntil { plugboard_ipc_load32(mapping.ring(1).readerSleeping) == 1 }, "the reader never slept")
        host.close()
        #expect(await reader.value)
    }

    @Test func aFullRingMakesTheWriterWait_untilTheReaderTakesAFrame_orCloseEndsIt() async throws {
        let configuration = RingTransport.Configuration(ringBytes: RingLayout.minimumRingBytes, spinNanoseconds: 0,
                                                        hangUpCheckNanoseconds: 600_000_000_000)
        let payload = Self.pattern(64 * 1024, seed: 1)
        let fitting = RingLayout.minimumRingBytes / RingLayout.recordBytes(payload: payload.count)
        for ending in ["read", "close"] {
            let (host, child, mapping) = try Self.pair(configuration)
            // The child's end lives to the iteration's end: released early, its socket's
            // hang-up makes the writer's send throw closed instead of waiting for room.
            defer { withExtendedLifetime(child) {} }
            for index in 0..<fitting { try host.send(Frame(.chunk, stream: UInt32(index), payload: payload)) }
            let returned = LockedValueBox(false)
            let writer = OwnThread.start { () -> IPCError? in
                defer { returned.withLock { $0 = true } }
                do throws(IPCError) { try host.send(Frame(.chunk, stream: UInt32(fitting), payload: payload)) } catch { return error }
                return nil
            }
            #expect(await mapping.waitUntil { plugboard_ipc_load32(mapping.ring(0).writerWaiting) == 1 }, "the writer never waited")
            #expect(!returned.withLock { $0 })
            if ending == "read" {
                #expect(try child.receive()?.stream == 0)
                #expect(await writer.value == nil)
                for index in 1...fitting { #expect(try child.receive()?.payload == payload, "frame \(index)") }
            } else {
                host.close()
                #expect(await writer.value == IPCError.closed)
            }
        }
    }

    @Test func aScribbledMappingIsMalformed_neverACrash() throws {
        let headAt = 0, tailAt = 64
        func scribbled(_ what: String, _ scribble: (SharedMapping) -> Void) throws -> IPCError? {
            let (host, child, mapping) = try Self.pair()
            // The child's end lives through the receive: its hang-up would end it first.
            defer { withExtendedLifetime(child) {} }
            scribble(mapping)
            do {
                _ = try host.receive()
                return nil
            } catch {
                // Closed for good after it.
                #expect(try host.receive() == nil, "\(what)")
                return error
            }
        }
        func isMalformed(_ error: IPCError?) -> Bool { if case .malformed = error?.reason { true } else { false } }

        #expect(isMalformed(try scribbled("head beyond the ring") { $0.store(UInt64(RingLayout.minimumRingBytes + 8), ring: 1, at: headAt) }))
        #expect(isMalformed(try scribbled("a header cut short") { $0.store(UInt64(8), ring: 1, at: headAt) }))
        #expect(isMalformed(try scribbled("a length over the most") { mapping in
            mapping.record(ring: 1, length: UInt32.max, flags: 0)
            mapping.store(UInt64(64), ring: 1, at: headAt)
        }))
        #expect(isMalformed(try scribbled("a length past what was published") { mapping in
            mapping.record(ring: 1, length: 100, flags: 0)
            mapping.store(UInt64(24), ring: 1, at: headAt)
        }))
        #expect(isMalformed(try scribbled("unknown flags") { mapping in
            mapping.record(ring: 1, length: 0, flags: 0x80)
            mapping.store(UInt64(16), ring: 1, at: headAt)
        }))
        #expect(isMalformed(try scribbled("a descriptor flagged but never sent") { mapping in
            mapping.record(ring: 1, length: 0, flags: RingLayout.hasDescriptor)
            mapping.store(UInt64(16), ring: 1, at: headAt)
        }))

        // The writer's side: a read position the reader could not have reached.
        let (host, _, mapping) = try Self.pair()
        mapping.store(UInt64(1) << 40, ring: 0, at: tailAt)
        #expect(throws: IPCError.self) { try host.send(Frame(.ping)) }
        #expect(throws: IPCError.closed) { try host.send(Frame(.ping)) }

        // Random bytes over the control and the records: an error or a frame, never a trap.
        var random = SplitMix64(state: 31)
        for _ in 0..<300 {
            let (host, child, mapping) = try Self.pair()
            defer { withExtendedLifetime(child) {} }
            for offset in stride(from: 0, to: 256, by: 8) { mapping.store(random.next(), ring: 1, bytesAt: offset) }
            mapping.store(random.next() % UInt64(2 * RingLayout.minimumRingBytes) + 1, ring: 1, at: headAt)
            _ = try? host.receive()
        }
    }

    @Test func theMemfdCannotBeShrunkUnderTheHost() throws {
        let (_, descriptors) = try RingTransport.pair(configuration: Self.small)
        defer { descriptors.forEach { close($0) } }
        #expect(ftruncate(descriptors[0], 4096) == -1 && errno == EPERM)
    }

    /// Both transports against `ipc-echo` in its own process: calls answered, a descriptor
    /// there and back, and the child's death seen as the end.
    @Test(arguments: TransportKind.allCases)
    func aChildProcessAnswers_andItsDeathEndsTheStream(kind: TransportKind) async throws {
        let echo = "\(BuildProducts.folder)/ipc-echo"
        try #require(access(echo, X_OK) == 0, "\(echo) is missing: swift build --build-tests builds it")
        let (host, descriptors) = try Transports.make(kind)
        let pid = try ChildProcess.spawn(echo, [kind.rawValue], environment: ChildProcess.environment, stdout: .file("/dev/null", append: true),
                                         stderr: .standardOutput, descriptors: descriptors)
        descriptors.forEach { close($0) }
        var reaped = false
        defer {
            if !reaped {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
        }
        let call = Self.pattern(64, seed: 3)
        let ends = try Self.pipeEnds()
        defer { close(ends[0]); close(ends[1]) }
        let results = await OwnThread.run { () -> (Frame?, Frame?) in
            do {
                try host.send(Frame(.call, stream: 42, payload: call))
                let answer = try host.receive()
                try host.send(Frame(.ping, stream: 0, payload: [9], descriptor: ends[1]))
                return (answer, try host.receive())
            } catch {
                return (nil, nil)
            }
        }
        #expect(results.0?.kind == .answer && results.0?.stream == 42 && results.0?.payload == call)
        let pong = try #require(results.1)
        #expect(pong.kind == .ping && pong.payload == [9] && pong.descriptor >= 0)
        if pong.descriptor >= 0 {
            #expect(write(pong.descriptor, "y", 1) == 1)
            close(pong.descriptor)
            var byte: UInt8 = 0
            #expect(read(ends[0], &byte, 1) == 1 && byte == UInt8(ascii: "y"))
        }

        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        reaped = true
        let started = MonotonicClock.now()
        let ended = await OwnThread.run { (try? host.receive()) == nil }
        let seconds = MonotonicClock.now() - started
        #expect(ended)
        // The hang-up check runs every 50 ms; the bound only says it hung.
        #expect(seconds < 10, "the end was seen after \(seconds) s")
    }
}

/// The test's own view of a ring transport's mapping: what a hostile child can write.
final class SharedMapping: @unchecked Sendable {
    // @unchecked: written only by the test's own thread; the transports read it through atomics.
    let base: UnsafeMutableRawPointer
    let ringBytes: Int

    init?(memfd: Int32, ringBytes: Int) {
        guard let base = mmap(nil, RingLayout.mappingBytes(ringBytes: ringBytes), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0),
              base != MAP_FAILED else { return nil }
        self.base = base
        self.ringBytes = ringBytes
    }

    deinit { munmap(base, RingLayout.mappingBytes(ringBytes: ringBytes)) }

    func ring(_ index: Int) -> Ring { Ring(mapping: base, index: index, ringBytes: ringBytes) }

    /// A 64-bit value into ring `index`'s control block.
    func store(_ value: UInt64, ring index: Int, at offset: Int) {
        plugboard_ipc_store_seq((base + RingLayout.control(index) + offset).assumingMemoryBound(to: UInt64.self), value)
    }

    /// A 64-bit value into ring `index`'s bytes.
    func store(_ value: UInt64, ring index: Int, bytesAt offset: Int) {
        (base + RingLayout.data(index, ringBytes: ringBytes) + offset).storeBytes(of: value, as: UInt64.self)
    }

    /// A record header at the start of ring `index`.
    func record(ring index: Int, length: UInt32, flags: UInt8) {
        let at = base + RingLayout.data(index, ringBytes: ringBytes)
        at.storeBytes(of: length.littleEndian, as: UInt32.self)
        (at + 4).storeBytes(of: UInt32(5).littleEndian, as: UInt32.self)
        (at + 8).storeBytes(of: Frame.Kind.chunk.rawValue, as: UInt8.self)
        (at + 9).storeBytes(of: flags, as: UInt8.self)
    }

    /// Waits for `condition` (a transport's thread reaching a state it shows in the
    /// mapping) on a thread of its own, not the cooperative pool's (two threads in CI);
    /// false after 30 s, which only means it hung.
    func waitUntil(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
        await OwnThread.run {
            let deadline = MonotonicClock.now() + 30
            while !condition() {
                if MonotonicClock.now() > deadline { return false }
                sched_yield()
            }
            return true
        }
    }
}
