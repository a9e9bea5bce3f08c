#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a ``Logger``'s lines go.
///
/// This type is an implementation detail for the host, which installs one handler for the
/// whole process; plugin authors use ``Logger`` and never implement it.
///
/// Implementation requirements: `log` may be called from any thread at any time and must
/// not block for long; it must not call back into the container.
public protocol LogHandler: Sendable {
    /// Writes one line; `level` has already passed the logger's minimum level.
    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata)
}

/// Writes `LEVEL label: message key=value ...` lines to standard error, one `write` each,
/// so concurrent lines never interleave.
public struct StreamLogHandler: LogHandler {
    private let fd: Int32

    /// A handler writing to standard error.
    public static let standardError = StreamLogHandler(fileDescriptor: 2)

    /// A handler writing to an open file descriptor that the caller keeps open.
    public init(fileDescriptor: Int32) { self.fd = fileDescriptor }

    public func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        var line = "\(level.rawValue.uppercased()) \(label): \(message)"
        for (k, v) in metadata.sorted(by: { $0.key < $1.key }) { line += " \(k)=\(v)" }
        line += "\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buf in
            guard let base = buf.baseAddress else { return }
            var off = 0
            while off < buf.count {
                let n = write(fd, base + off, buf.count - off)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
                off += n
            }
        }
    }
}

/// Drops every line.
public struct NoOpLogHandler: LogHandler {
    public init() {}
    public func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {}
}
