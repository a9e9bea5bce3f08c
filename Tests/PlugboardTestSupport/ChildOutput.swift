#if canImport(Glibc)
import Glibc
#endif

/// What a server process the tests start writes on its standard output pipe.
public enum ChildOutput {
    /// The first line on `fd` (without its newline), waiting at most `timeoutMilliseconds`
    /// in all; what came before the end of the pipe if it ends first; nil when nothing did.
    /// Byte by byte, so that nothing after the line (the server's later output) is consumed.
    public static func firstLine(_ fd: Int32, timeoutMilliseconds: Int64) -> String? {
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + .milliseconds(timeoutMilliseconds)
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno != EINTR { return nil }
            if ready <= 0 { continue }
            var byte: UInt8 = 0
            if read(fd, &byte, 1) <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }
}
