#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardBytes

/// Reads a small file whole (the shared credentials file), with Glibc.
enum PlainFile {
    struct ReadError: Error {}

    /// The file's bytes, at most `limit` of them.
    static func read(_ path: String, limit: Int) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError() }
        defer { close(fd) }
        do {
            return try DescriptorIO.readToEnd(fd, limit: limit, chunkSize: 1 << 14)
        } catch {
            throw ReadError()
        }
    }
}
