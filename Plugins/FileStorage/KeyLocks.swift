import PlugboardConcurrency

/// In-process locks by object key, striped: what makes a `.matches` write's check and
/// rename one step against every other write and delete of the key in this process.
///
/// Striped (a fixed set of locks, a key hashed to one) so that they cost nothing to keep:
/// two keys sharing a stripe only wait for each other's rename, which the lock covers
/// alone (never the data's write or `fsync`). Pthread mutexes, taken only on
/// ``BlockingIO``'s threads, never on Swift's cooperative pool. They do not reach other
/// processes sharing a root: there, `.matches` is not atomic (docs/plugins/FileStorage.md).
enum KeyLocks {
    /// Enough stripes that the 16 writers of the conformance suite rarely share one.
    static let stripeCount = 64
    /// Each stripe counts the writes it has covered: a box of `Void` would do, but
    /// ThreadSanitizer reports the `inout` access of a zero-sized value as a race between
    /// two threads that both hold the lock.
    private static let stripes = (0..<stripeCount).map { _ in LockedValueBox(0) }

    /// Runs `body` with the lock of `key`'s stripe held.
    static func withLock<T, E: Error>(_ key: String, _ body: () throws(E) -> T) throws(E) -> T {
        var hasher = Hasher()
        hasher.combine(Array(key.utf8))
        let stripe = Int(UInt(bitPattern: hasher.finalize()) % UInt(stripeCount))
        return try stripes[stripe].withLock { (covered: inout Int) throws(E) -> T in
            covered &+= 1
            return try body()
        }
    }
}
