#if canImport(Glibc)
import Glibc
#endif
import CPlugboardIPC

/// Where everything sits in a ring transport's shared mapping, and the record format.
///
/// ```
/// 0       header: magic, version, ring size (written once by the host)
/// 1024    ring 0's control (host -> child), 2048 ring 1's (child -> host), each:
///           +0   head: the writer's position (bytes ever written)   +8  writer closed
///           +12  the CPU the writer last wrote from, plus one (a hint for the reader's spin)
///           +64  tail: the reader's position (bytes ever read)      +72 reader closed
///           +128 the reader sleeps (futex word)
///           +192 the writer waits for room (futex word)
/// 4096    ring 0's bytes, then ring 1's; each a power of two
/// ```
///
/// Positions only grow (64-bit, never wrap in practice); a record sits at `position & mask`
/// and may wrap around the end of its ring. A record is a 12-byte header (payload length
/// u32, stream u32, kind u8, flags u8, 2 bytes zero), then the payload, padded to 8 bytes.
/// The fields each side writes sit on cache lines of their own, so that the writer's
/// stores do not bounce the reader's line and back.
enum RingLayout {
    static let magic: UInt64 = 0x3130_474E_4952_4250  // "PBRING01", little-endian
    static let version: UInt32 = 1
    static let headerBytes = 4096
    static let recordHeaderBytes = 12
    /// The record flag of a frame whose descriptor waits on the side socket.
    static let hasDescriptor: UInt8 = 1

    /// A ring must hold at least one frame of the most payload, twice: the smallest that
    /// lets a writer fill one while the reader takes the other.
    static let minimumRingBytes = 1 << 18
    static let maximumRingBytes = 1 << 26

    static func control(_ ring: Int) -> Int { 1024 * (ring + 1) }
    static func data(_ ring: Int, ringBytes: Int) -> Int { headerBytes + ring * ringBytes }
    static func mappingBytes(ringBytes: Int) -> Int { headerBytes + 2 * ringBytes }

    /// The bytes a record of `payload` bytes takes in the ring.
    static func recordBytes(payload: Int) -> Int { (recordHeaderBytes + payload + 7) & ~7 }

    static func isValidRingSize(_ bytes: Int) -> Bool {
        bytes >= minimumRingBytes && bytes <= maximumRingBytes && bytes & (bytes - 1) == 0
    }
}

/// One direction's ring inside the mapping: pointers to its control fields and bytes.
/// Every value read through it came from memory the peer can write at any moment, so the
/// transport reads each field once and checks it before use.
struct Ring {
    let head: UnsafeMutablePointer<UInt64>
    let writerClosed: UnsafeMutablePointer<UInt32>
    let writerCPU: UnsafeMutablePointer<UInt32>
    let tail: UnsafeMutablePointer<UInt64>
    let readerClosed: UnsafeMutablePointer<UInt32>
    let readerSleeping: UnsafeMutablePointer<UInt32>
    let writerWaiting: UnsafeMutablePointer<UInt32>
    let bytes: UnsafeMutableRawPointer
    let count: Int

    init(mapping: UnsafeMutableRawPointer, index: Int, ringBytes: Int) {
        let control = mapping + RingLayout.control(index)
        head = (control + 0).assumingMemoryBound(to: UInt64.self)
        writerClosed = (control + 8).assumingMemoryBound(to: UInt32.self)
        writerCPU = (control + 12).assumingMemoryBound(to: UInt32.self)
        tail = (control + 64).assumingMemoryBound(to: UInt64.self)
        readerClosed = (control + 72).assumingMemoryBound(to: UInt32.self)
        readerSleeping = (control + 128).assumingMemoryBound(to: UInt32.self)
        writerWaiting = (control + 192).assumingMemoryBound(to: UInt32.self)
        bytes = mapping + RingLayout.data(index, ringBytes: ringBytes)
        count = ringBytes
    }

    /// Copies `length` bytes (at most the ring's size) from `position`, across the end.
    func copyOut(at position: UInt64, into target: UnsafeMutableRawPointer, _ length: Int) {
        let offset = Int(position & UInt64(count - 1))
        let first = min(length, count - offset)
        memcpy(target, bytes + offset, first)
        if length > first { memcpy(target + first, bytes, length - first) }
    }

    /// Copies `length` bytes (at most the ring's size) to `position`, across the end.
    func copyIn(at position: UInt64, from source: UnsafeRawPointer, _ length: Int) {
        let offset = Int(position & UInt64(count - 1))
        let first = min(length, count - offset)
        memcpy(bytes + offset, source, first)
        if length > first { memcpy(bytes, source + first, length - first) }
    }

    /// Wakes the peer's reader if it sleeps: one load when it is awake, no system call.
    func wakeReader() {
        if plugboard_ipc_load32(readerSleeping) != 0 && plugboard_ipc_exchange32(readerSleeping, 0) != 0 {
            plugboard_ipc_futex_wake(readerSleeping, 1)
        }
    }

    /// Wakes the peer's writer if it waits for room.
    func wakeWriter() {
        if plugboard_ipc_load32(writerWaiting) != 0 && plugboard_ipc_exchange32(writerWaiting, 0) != 0 {
            plugboard_ipc_futex_wake(writerWaiting, 1)
        }
    }
}
