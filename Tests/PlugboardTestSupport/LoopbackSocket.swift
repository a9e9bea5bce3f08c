#if canImport(Glibc)
import Glibc
#endif

/// TCP sockets on 127.0.0.1 for the servers and fakes the tests run.
public enum LoopbackSocket {
    /// A socket bound to a port the kernel picks, listening when asked (with `backlog`);
    /// nil when the system refuses. The caller owns (and closes) the descriptor.
    public static func bound(listening: Bool, backlog: Int32 = 16) -> (fd: Int32, port: Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && (!listening || listen(fd, backlog) == 0) && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port that was free a moment ago (bound, then released), or nil.
    public static func freePort() -> Int? {
        guard let (fd, port) = bound(listening: false) else { return nil }
        close(fd)
        return port
    }
}
