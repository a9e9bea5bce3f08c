import Foundation

/// A value kept together with the lock that protects it, so it cannot be reached without
/// holding the lock (NIO's `NIOLockedValueBox` idea).
///
/// `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`, which ThreadSanitizer
/// cannot see on this toolchain (DESIGN.md fact 13).
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
