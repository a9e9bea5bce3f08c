#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A system call that failed, with the `errno` it left; callers word their own errors.
public struct SystemCallFailure: Error, Equatable, Sendable {
    public let code: Int32

    public init(code: Int32) { self.code = code }
}

/// Whole reads and writes over a file descriptor: the loops every caller wrote again,
/// with `EINTR` retried and short transfers continued.
public enum DescriptorIO {
    /// Everything from `fd`'s current offset to its end, but never more than `limit`
    /// bytes: a caller that must notice a file over its limit passes one byte more.
    /// `sizeHint` only reserves room (a file's size from `fstat`).
    public static func readToEnd(_ fd: Int32, limit: Int = .max, chunkSize: Int = 1 << 16,
                                 sizeHint: Int = 0) throws(SystemCallFailure) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(min(sizeHint, limit))
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while out.count < limit {
            let wanted = min(chunk.count, limit - out.count)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if n == 0 { break }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw SystemCallFailure(code: code)
            }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// Writes every byte of `bytes`, at the descriptor's current offset or, with `offset`,
    /// at that offset without moving the descriptor's (`pwrite`). A write that takes no
    /// byte is reported as `EIO`, since retrying it would loop for ever.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int? = nil) throws(SystemCallFailure) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            // Linux moves at most about 2 GiB per call; asking for 1 GiB keeps every call whole.
            let count = min(bytes.count - done, 1 << 30)
            let n = offset.map { pwrite(fd, base + done, count, off_t($0 + done)) } ?? write(fd, base + done, count)
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw SystemCallFailure(code: code)
            }
            if n == 0 { throw SystemCallFailure(code: EIO) }
            done += n
        }
    }

    /// `writeAll(_:_:at:)` for an array.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int? = nil) throws(SystemCallFailure) {
        let failure = bytes.withUnsafeBytes { raw -> SystemCallFailure? in
            do throws(SystemCallFailure) {
                try writeAll(fd, raw, at: offset)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }
}
