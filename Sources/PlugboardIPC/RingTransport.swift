#if canImport(Glibc)
import Glibc
#endif
import CPlugboardIPC
import PlugboardConcurrency
import Synchronization

/// Frames through shared memory: a ring each way in one sealed `memfd` mapping, a futex to
/// wake a reader that sleeps, and a `SOCK_SEQPACKET` socket beside it for descriptors and
/// for the peer's end.
///
/// A frame is copied into the ring and the position published; the writer makes a system
/// call only when the reader sleeps. The reader spins on the position for
/// ``Configuration/spinNanoseconds`` before it sleeps, so that a reader which gets frames
/// back to back never sleeps and no frame costs a wake-up. A full ring makes the writer wait
/// the same way (spin, then sleep until the reader moves on). A frame's descriptor goes on
/// the socket before the frame's record is published, so the reader finds it there in order.
///
/// The peer's end: its `close()` marks the mapping and wakes this side; a peer that died
/// without it is seen by the socket's hang-up, checked every
/// ``Configuration/hangUpCheckNanoseconds`` while a side waits.
///
/// The peer can write anything into the mapping at any time. Each position, length and
/// flag read from it is read once, checked against this side's own state, and a bad one
/// ends the transport with ``IPCError/Reason/malformed(_:)``; this side's own positions
/// live in its own memory. The memfd is sealed, so the peer cannot shrink it under this
/// side's mapping.
public final class RingTransport: FrameTransport, @unchecked Sendable {
    // @unchecked: the mapping's fields are touched only through the C atomics (or copied
    // out and checked); `reader` is used by the one receiving thread the protocol allows
    // (FrameTransport.receive()); the writer's state is behind `writer`'s lock; the rest
    // never changes after init.

    /// How a ring transport waits and how big its rings are.
    public struct Configuration: Sendable {
        /// Bytes of each direction's ring: a power of two from 256 KiB to 64 MiB. The host's
        /// choice; the child's end takes the size of the mapping it is given.
        public var ringBytes: Int
        /// How long a reader (or a writer facing a full ring) spins before it sleeps on the
        /// futex. While it spins it takes a core; a frame that comes in that time costs no
        /// wake-up, which across vCPUs costs far more than the spin (docs/BENCHMARKS.md,
        /// "The isolated plugin's wire"). 0: sleep at once.
        public var spinNanoseconds: Int
        /// How often a side that sleeps wakes to check whether the peer has hung up (a peer
        /// that died cannot wake it): the bound on noticing a dead child.
        public var hangUpCheckNanoseconds: Int

        public init(ringBytes: Int = 1 << 20, spinNanoseconds: Int = 50_000, hangUpCheckNanoseconds: Int = 50_000_000) {
            self.ringBytes = ringBytes
            self.spinNanoseconds = spinNanoseconds
            self.hangUpCheckNanoseconds = hangUpCheckNanoseconds
        }
    }

    private struct ReaderState {
        var position: UInt64 = 0
        var descriptors: UInt64 = 0
        /// How long the next wait spins: the configured time after a spin that caught a
        /// record, halved after each one that did not (to a sixteenth), so that a reader
        /// whose records come far apart stops burning a core for nothing.
        var spinBudget: UInt64
    }

    private struct WriterState {
        var position: UInt64 = 0
        var descriptors: UInt64 = 0
    }

    /// The side socket (descriptors, hang-up). Closed only when the transport goes away, so
    /// that no other thread's new descriptor can take its number while a reader uses it.
    public let socket: Int32
    private let mapping: UnsafeMutableRawPointer
    private let mappingBytes: Int
    private let incoming: Ring
    private let outgoing: Ring
    private let configuration: Configuration
    private var reader: ReaderState
    private let writer = LockedValueBox(WriterState())
    private let closed = Atomic<Bool>(false)
    /// The side socket hung up (the peer died or closed): once the ring is empty every
    /// receive answers nil at once, and a send throws ``IPCError/closed`` as a socket's would
    /// instead of filling a ring nobody reads.
    private let peerGone = Atomic<Bool>(false)

    private init(socket: Int32, mapping: UnsafeMutableRawPointer, ringBytes: Int, isHost: Bool, configuration: Configuration) {
        self.socket = socket
        self.mapping = mapping
        mappingBytes = RingLayout.mappingBytes(ringBytes: ringBytes)
        // The host writes ring 0 and reads ring 1; the child the other way round.
        outgoing = Ring(mapping: mapping, index: isHost ? 0 : 1, ringBytes: ringBytes)
        incoming = Ring(mapping: mapping, index: isHost ? 1 : 0, ringBytes: ringBytes)
        var configuration = configuration
        configuration.ringBytes = ringBytes
        self.configuration = configuration
        reader = ReaderState(spinBudget: UInt64(max(0, configuration.spinNanoseconds)))
    }

    deinit {
        munmap(mapping, mappingBytes)
        Glibc.close(socket)
    }

    /// A connected pair: this process's end, and the child's descriptors in the order
    /// ``init(attaching:configuration:)`` takes them: the memfd, the side socket (both
    /// close-on-exec; the spawner hands them over with dup2, then closes its copies).
    public static func pair(configuration: Configuration = Configuration()) throws(IPCError) -> (RingTransport, child: [Int32]) {
        let ringBytes = configuration.ringBytes
        guard RingLayout.isValidRingSize(ringBytes) else {
            throw .malformed("expected a ring size that is a power of two from \(RingLayout.minimumRingBytes) to "
                             + "\(RingLayout.maximumRingBytes) bytes, found \(ringBytes)")
        }
        let size = RingLayout.mappingBytes(ringBytes: ringBytes)
        let memfd = plugboard_ipc_memfd("plugboard-ring", size)
        guard memfd >= 0 else { throw .system("memfd_create") }
        guard let mapping = plugboard_ipc_map(memfd, size) else {
            let code = errno
            Glibc.close(memfd)
            throw .system("mmap", code)
        }
        var fds: [Int32] = [-1, -1]
        guard plugboard_ipc_socketpair(&fds) == 0 else {
            let code = errno
            munmap(mapping, size)
            Glibc.close(memfd)
            throw .system("socketpair", code)
        }
        mapping.storeBytes(of: RingLayout.magic.littleEndian, toByteOffset: 0, as: UInt64.self)
        mapping.storeBytes(of: RingLayout.version.littleEndian, toByteOffset: 8, as: UInt32.self)
        mapping.storeBytes(of: UInt64(ringBytes).littleEndian, toByteOffset: 16, as: UInt64.self)
        let host = RingTransport(socket: fds[0], mapping: mapping, ringBytes: ringBytes, isHost: true, configuration: configuration)
        return (host, [memfd, fds[1]])
    }

    /// The child's end over the descriptors ``pair(configuration:)`` made, which it now owns
    /// (the memfd is closed once mapped). `configuration`'s ring size is ignored: the
    /// mapping's is used.
    public convenience init(attaching descriptors: [Int32], configuration: Configuration = Configuration()) throws(IPCError) {
        guard descriptors.count == 2 else {
            throw .malformed("expected 2 descriptors for a ring transport (memfd, socket), found \(descriptors.count)")
        }
        let (memfd, socket) = (descriptors[0], descriptors[1])
        // Numbers a spawner gave with dup2 lost close-on-exec: a process the plugin starts
        // must not hold the wire open after this one dies.
        _ = fcntl(memfd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(socket, F_SETFD, FD_CLOEXEC)
        var status = stat()
        guard fstat(memfd, &status) == 0 else {
            let code = errno
            Glibc.close(memfd)
            Glibc.close(socket)
            throw .system("fstat", code)
        }
        let size = Int(status.st_size)
        let ringBytes = (size - RingLayout.headerBytes) / 2
        guard size > RingLayout.headerBytes, RingLayout.isValidRingSize(ringBytes), RingLayout.mappingBytes(ringBytes: ringBytes) == size,
              let mapping = plugboard_ipc_map(memfd, size) else {
            Glibc.close(memfd)
            Glibc.close(socket)
            throw .malformed("expected a ring mapping of 4 KiB and two rings of a power of two bytes, found a memfd of \(size) bytes")
        }
        Glibc.close(memfd)
        let magic = UInt64(littleEndian: mapping.load(fromByteOffset: 0, as: UInt64.self))
        let version = UInt32(littleEndian: mapping.load(fromByteOffset: 8, as: UInt32.self))
        let stated = UInt64(littleEndian: mapping.load(fromByteOffset: 16, as: UInt64.self))
        guard magic == RingLayout.magic, version == RingLayout.version, stated == UInt64(ringBytes) else {
            munmap(mapping, size)
            Glibc.close(socket)
            throw .malformed("expected a ring mapping version \(RingLayout.version) of \(ringBytes)-byte rings, found magic "
                             + "\(String(magic, radix: 16)), version \(version), ring size \(stated)")
        }
        self.init(socket: socket, mapping: mapping, ringBytes: ringBytes, isHost: false, configuration: configuration)
    }

    // MARK: - Sending

    public func send(_ frame: Frame) throws(IPCError) {
        guard frame.payload.count <= Frame.maxPayload else {
            throw .malformed("expected a payload of at most \(Frame.maxPayload) bytes, found \(frame.payload.count)")
        }
        let need = RingLayout.recordBytes(payload: frame.payload.count)
        try writer.withLock { (state: inout WriterState) throws(IPCError) in
            try waitForRoom(need, from: state.position)
            var flags: UInt8 = 0
            if frame.descriptor >= 0 {
                // On the socket first: once the record is published the reader may look for it.
                var sequence = state.descriptors.littleEndian
                let sent = withUnsafeBytes(of: &sequence) { plugboard_ipc_send(socket, $0.baseAddress, 8, nil, 0, frame.descriptor) }
                if sent < 0 { throw errno == EPIPE || errno == ECONNRESET ? .closed : .system("sendmsg") }
                state.descriptors += 1
                flags = RingLayout.hasDescriptor
            }
            var header: (UInt32, UInt32, UInt8, UInt8, UInt16) = (UInt32(frame.payload.count).littleEndian, frame.stream.littleEndian,
                                                                  frame.kind.rawValue, flags, 0)
            withUnsafeBytes(of: &header) { outgoing.copyIn(at: state.position, from: $0.baseAddress!, RingLayout.recordHeaderBytes) }
            frame.payload.withUnsafeBytes { body in
                if let base = body.baseAddress {
                    outgoing.copyIn(at: state.position &+ UInt64(RingLayout.recordHeaderBytes), from: base, body.count)
                }
            }
            state.position &+= UInt64(need)
            plugboard_ipc_store32_relaxed(outgoing.writerCPU, UInt32(bitPattern: plugboard_ipc_current_cpu() &+ 1))
            plugboard_ipc_store_seq(outgoing.head, state.position)
            outgoing.wakeReader()
        }
    }

    /// Returns once the outgoing ring has `need` bytes free; spins, then sleeps on the
    /// reader's futex word, checking for the end while it waits.
    private func waitForRoom(_ need: Int, from position: UInt64) throws(IPCError) {
        let capacity = UInt64(outgoing.count)
        var spinUntil: UInt64 = 0
        while true {
            if closed.load(ordering: .sequentiallyConsistent) || peerGone.load(ordering: .relaxed)
                || plugboard_ipc_load32(outgoing.readerClosed) != 0 { throw .closed }
            let used = position &- plugboard_ipc_load_seq(outgoing.tail)
            guard used <= capacity else {
                close()
                throw .malformed("the peer's read position is \(Int64(bitPattern: used)) bytes behind this side's write "
                                 + "position; a ring holds \(capacity)")
            }
            if capacity - used >= UInt64(need) { return }
            if spinUntil == 0 { spinUntil = Self.nanoseconds() + UInt64(configuration.spinNanoseconds) }
            if Self.nanoseconds() < spinUntil {
                for _ in 0..<64 { plugboard_ipc_pause() }
                // As the reader's spin does: the reader may need this CPU to make room.
                sched_yield()
                continue
            }
            plugboard_ipc_store32(outgoing.writerWaiting, 1)
            // Checked again after the flag is up: the reader checks the flag after it moves.
            if position &- plugboard_ipc_load_seq(outgoing.tail) == used, !closed.load(ordering: .sequentiallyConsistent) {
                if plugboard_ipc_futex_wait(outgoing.writerWaiting, 1, Int64(configuration.hangUpCheckNanoseconds)) == 1,
                   plugboard_ipc_hung_up(socket) != 0 {
                    peerGone.store(true, ordering: .relaxed)
                    throw .closed
                }
            }
            plugboard_ipc_store32(outgoing.writerWaiting, 0)
        }
    }

    // MARK: - Receiving

    public func receive() throws(IPCError) -> Frame? {
        while true {
            if closed.load(ordering: .sequentiallyConsistent) { return nil }
            let available = plugboard_ipc_load_acquire(incoming.head) &- reader.position
            if available != 0 { return try take(available) }
            // The peer's close is marked after its last record: seen here, every record is too.
            if plugboard_ipc_load32(incoming.writerClosed) != 0 {
                if plugboard_ipc_load_acquire(incoming.head) == reader.position { return nil }
                continue
            }
            if peerGone.load(ordering: .relaxed) { return nil }
            waitForRecord()
        }
    }

    /// Returns when a record may have come, this side closed, or the peer hung up (then
    /// `peerGone` is set): spins first, then sleeps on the futex.
    ///
    /// No spin when the peer last wrote from this CPU: it would only run once this thread
    /// gives the CPU up, so spinning would delay the very record it waits for (a loaded
    /// machine puts both processes on one CPU).
    private func waitForRecord() {
        let position = reader.position
        let budget = reader.spinBudget
        if budget > 0, plugboard_ipc_load32_relaxed(incoming.writerCPU) != UInt32(bitPattern: plugboard_ipc_current_cpu() &+ 1) {
            let spinUntil = Self.nanoseconds() + budget
            var rounds = 0
            repeat {
                for _ in 0..<16 {
                    plugboard_ipc_pause()
                    if plugboard_ipc_load_acquire(incoming.head) != position {
                        reader.spinBudget = UInt64(configuration.spinNanoseconds)
                        return
                    }
                }
                if closed.load(ordering: .relaxed) { return }
                // Every few microseconds the CPU is offered to whatever else waits for it
                // here (the threads this reader just woke with an answer, on two cores):
                // the spin takes only time nobody else wants.
                rounds += 1
                if rounds & 3 == 0 { sched_yield() }
            } while Self.nanoseconds() < spinUntil
            reader.spinBudget = max(budget / 2, UInt64(configuration.spinNanoseconds / 16))
        }
        plugboard_ipc_store32(incoming.readerSleeping, 1)
        // Checked again after the flag is up: the writer checks the flag after it publishes.
        if plugboard_ipc_load_seq(incoming.head) == position, plugboard_ipc_load32(incoming.writerClosed) == 0,
           !closed.load(ordering: .sequentiallyConsistent) {
            if plugboard_ipc_futex_wait(incoming.readerSleeping, 1, Int64(configuration.hangUpCheckNanoseconds)) == 1,
               plugboard_ipc_hung_up(socket) != 0 {
                peerGone.store(true, ordering: .relaxed)
            }
        }
        plugboard_ipc_store32(incoming.readerSleeping, 0)
    }

    /// The record at the reader's position, `available` bytes having been published.
    private func take(_ available: UInt64) throws(IPCError) -> Frame {
        let capacity = UInt64(incoming.count)
        guard available <= capacity else {
            throw fail("the peer's write position is \(Int64(bitPattern: available)) bytes ahead of this side's read "
                       + "position; a ring holds \(capacity)")
        }
        guard available >= UInt64(RingLayout.recordHeaderBytes) else {
            throw fail("expected a record header of \(RingLayout.recordHeaderBytes) bytes, found \(available) bytes published")
        }
        var header: (UInt32, UInt32, UInt8, UInt8, UInt16) = (0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &header) { incoming.copyOut(at: reader.position, into: $0.baseAddress!, RingLayout.recordHeaderBytes) }
        let length = Int(UInt32(littleEndian: header.0))
        let stream = UInt32(littleEndian: header.1)
        let flags = header.3
        guard length <= Frame.maxPayload else {
            throw fail("expected a record of at most \(Frame.maxPayload) bytes of payload, found \(length)")
        }
        let size = RingLayout.recordBytes(payload: length)
        guard UInt64(size) <= available else {
            throw fail("expected a record of \(size) bytes, found \(available) bytes published")
        }
        guard flags & ~RingLayout.hasDescriptor == 0, header.4 == 0 else {
            throw fail("expected record flags 0 or 1 and zero padding, found flags \(flags) and padding \(header.4)")
        }
        let start = reader.position &+ UInt64(RingLayout.recordHeaderBytes)
        let payload = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            if let base = buffer.baseAddress, length > 0 { incoming.copyOut(at: start, into: base, length) }
            count = length
        }
        var descriptor: Int32 = -1
        if flags & RingLayout.hasDescriptor != 0 { descriptor = try takeDescriptor() }
        reader.position &+= UInt64(size)
        plugboard_ipc_store_seq(incoming.tail, reader.position)
        incoming.wakeWriter()
        return Frame(Frame.Kind(rawValue: header.2), stream: stream, payload: payload, descriptor: descriptor)
    }

    /// The descriptor a flagged record announced: already on the socket (the writer sends
    /// it first), stamped with its sequence number, so it is taken without waiting.
    private func takeDescriptor() throws(IPCError) -> Int32 {
        var sequence: UInt64 = 0
        var descriptor: Int32 = -1
        let got = withUnsafeMutableBytes(of: &sequence) {
            plugboard_ipc_receive_flags(socket, $0.baseAddress, 8, &descriptor, Int32(MSG_DONTWAIT))
        }
        guard got == 8, descriptor >= 0, UInt64(littleEndian: sequence) == reader.descriptors else {
            if descriptor >= 0 { Glibc.close(descriptor) }
            throw fail("expected descriptor \(reader.descriptors) on the side socket for a flagged record, found "
                       + (got < 0 ? "none" : "\(got) bytes, sequence \(UInt64(littleEndian: sequence)), "
                          + (descriptor >= 0 ? "a descriptor" : "no descriptor")))
        }
        reader.descriptors += 1
        return descriptor
    }

    /// A peer that broke the format: the transport is closed for good.
    private func fail(_ what: String) -> IPCError {
        close()
        return .malformed(what)
    }

    // MARK: - Closing

    public func close() {
        guard !closed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        // The peer: its reader sees the end after the last record, its writer stops waiting.
        plugboard_ipc_store32(outgoing.writerClosed, 1)
        plugboard_ipc_store32(incoming.readerClosed, 1)
        // Everyone who may sleep on the mapping, this side's reader and writer included.
        for word in [outgoing.readerSleeping, incoming.writerWaiting, incoming.readerSleeping, outgoing.writerWaiting] {
            plugboard_ipc_store32(word, 0)
            plugboard_ipc_futex_wake(word, Int32.max)
        }
        _ = Glibc.shutdown(socket, Int32(SHUT_RDWR))
    }

    private static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
