#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a small file whole (the shared credentials file), with Glibc.
enum PlainFile {
    struct ReadError: Error {}

    /// The file's bytes, at most `limit` of them.
    static func read(_ path: String, limit: Int) throws(ReadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError() }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw ReadError() }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return out
    }
}
