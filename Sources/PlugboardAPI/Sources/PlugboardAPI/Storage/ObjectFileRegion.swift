#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A region of an open file that holds an object's bytes, handed to the server with an
/// ``ObjectBody`` (``ObjectBody/init(_:)``, ``ObjectBody/init(_:next:)``) so that it can send them
/// with `sendfile(2)`, straight from the page cache to the socket, as nginx does: a client
/// that reads slowly, or never, then holds only the kernel's socket buffer, not copies of
/// the file in the server's memory (PlugboardAPI 1.7).
///
/// The region owns its descriptor: it closes it when its last reference goes, so exactly
/// once, whether the answer was sent whole, refused before a byte left, or cut short by
/// a client gone away. A storage hands over a descriptor of its own for the region
/// (`dup(2)` one it keeps using, or one opened for the purpose) and never closes it
/// itself; a consumer never closes ``descriptor`` either, and uses it only with calls
/// that take an explicit offset (`pread`, `sendfile` with an offset), which leave the
/// descriptor's own file position alone.
///
/// ```swift
/// let region = try ObjectFileRegion(descriptor: dup(fd), offset: dataStart, length: size)
/// return ObjectStream(info: info, body: ObjectBody(region))
/// ```
public final class ObjectFileRegion: Sendable {
    /// An open descriptor of a regular file; the region's to close.
    public let descriptor: Int32
    /// Where the region starts in the file.
    public let offset: Int
    /// The number of bytes in the region.
    public let length: Int

    /// A region of `length` bytes from `offset` in the file open as `descriptor`, which
    /// the region then owns. On a refusal the descriptor is closed before the error is
    /// thrown, so a caller that hands one over never closes it, whatever happens.
    ///
    /// - Throws: `storage.invalid_argument` for a negative descriptor, offset or length.
    public init(descriptor: Int32, offset: Int, length: Int) throws(PlugboardError) {
        guard descriptor >= 0, offset >= 0, length >= 0 else {
            if descriptor >= 0 { close(descriptor) }
            throw PlugboardError(
                .storageInvalidArgument, "invalid file region",
                detail: "Expected a descriptor, an offset and a length of 0 or more, found \(descriptor), \(offset) and \(length).",
                hint: "Pass an open descriptor and the region's offset and length in bytes.")
        }
        self.descriptor = descriptor
        self.offset = offset
        self.length = length
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes of the region from `position` (counted from the region's
    /// start), read with `pread` on the calling thread; fewer only at the region's end.
    ///
    /// - Throws: `storage.failed` when the read fails, or the file ends before the region
    ///   does (something cut it after the region was made).
    public func read(count: Int, at position: Int) throws(PlugboardError) -> [UInt8] {
        let wanted = max(0, min(count, length - position))
        guard wanted > 0, position >= 0 else { return [] }
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
            while initialized < wanted {
                let n = pread(descriptor, buffer.baseAddress! + initialized, wanted - initialized,
                              off_t(offset + position + initialized))
                if n > 0 {
                    initialized += n
                } else if n == 0 {
                    break
                } else if errno != EINTR {
                    failure = errno
                    break
                }
            }
        }
        guard failure == 0, bytes.count == wanted else {
            let found = failure != 0 ? "error \(failure) (\(String(cString: strerror(failure))))"
                : "the file's end after \(position + bytes.count) of the region's \(length) bytes"
            throw PlugboardError(
                .storageFailed, "could not read a file region",
                detail: "Expected \(wanted) bytes at offset \(offset + position), found \(found).",
                hint: "Something changed the file after the storage opened it; read the object again.")
        }
        return bytes
    }
}

extension ObjectBody {
    /// The bytes of one region of an open file, the region's chunks read with `pread` on
    /// the task that reads the body (PlugboardAPI 1.7): for a file the page cache holds.
    /// A storage whose reads may wait for a disk passes its own reader to
    /// ``init(_:next:)`` instead.
    public init(_ region: ObjectFileRegion) {
        let position = BodyPosition()
        self.init(region) {
            let at = position.advance(by: Self.regionChunkBytes, limit: region.length)
            guard at.count > 0 else { return nil }
            return try region.read(count: at.count, at: at.start)
        }
    }

    /// The most bytes one chunk of ``init(_:)`` holds: what a reader holds at once.
    static let regionChunkBytes = 256 * 1024
}

/// The next unread offset of ``ObjectBody/init(_:)``'s region.
///
/// `@unchecked Sendable`: `next` is only read or written with `lock` held.
private final class BodyPosition: @unchecked Sendable {
    private let lock = PThreadMutex()
    private var next = 0

    /// Claims the next `count` bytes (fewer at `limit`): where they start, and how many.
    func advance(by count: Int, limit: Int) -> (start: Int, count: Int) {
        lock.lock()
        defer { lock.unlock() }
        let start = next
        let taken = max(0, min(count, limit - start))
        next += taken
        return (start, taken)
    }
}
