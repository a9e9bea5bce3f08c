#if canImport(Glibc)
import Glibc
#endif

/// Why a transport failed. Each says what was expected and what was found; the worker
/// layer turns it into the plugin's error with the plugin's name.
public struct IPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// A system call failed with this errno.
        case system(call: String, errno: Int32)
        /// The peer sent bytes that are not a frame, or a frame that breaks the protocol.
        case malformed(String)
        /// The connection is closed on this side.
        case closed
    }

    public let reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public static func system(_ call: String, _ code: Int32 = errno) -> IPCError { IPCError(.system(call: call, errno: code)) }
    public static func malformed(_ what: String) -> IPCError { IPCError(.malformed(what)) }
    public static let closed = IPCError(.closed)

    public var description: String {
        switch reason {
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .malformed(let what): "malformed frame: \(what)"
        case .closed: "the connection is closed"
        }
    }
}
