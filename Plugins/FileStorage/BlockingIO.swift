import PlugboardAPI
import PlugboardConcurrency

/// Blocking file-system work goes to ``BlockingWork``'s threads rather than
/// Swift's cooperative pool (one thread per core): a 64 MiB write and its `fsync` must not
/// stall other tasks of the host, and many of them must be able to wait on the disk at once.
enum BlockingIO {
    /// Runs `body` on a blocking lane and returns its result.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(PlugboardError) -> T) async throws(PlugboardError) -> T {
        try await BlockingWork.run(body)
    }

    /// Runs `body` on the calling thread with nothing allowed to wait for the disk
    /// (`cachedOnly` true: open and read only what the kernel has cached, as nginx's
    /// workers read cached files themselves), and only where that would have waited, on
    /// a blocking lane (`cachedOnly` false). A GET of a cached object then costs no thread
    /// hop at all, two fewer context switches than the lane.
    static func runCachedFirst<T: Sendable>(_ body: @escaping @Sendable (_ cachedOnly: Bool) throws(PlugboardError) -> T)
        async throws(PlugboardError) -> T {
        if let done = try runCachedOnly({ () throws(PlugboardError) in try body(true) }) { return done }
        // Cold: the same work on a blocking lane, from the start.
        return try await run { () throws(PlugboardError) -> T in try body(false) }
    }

    /// Runs `body` on the calling thread with nothing allowed to wait for the disk; nil
    /// where it would have waited, or where this kernel cannot tell (``FileSystem/cachedReads``).
    static func runCachedOnly<T>(_ body: () throws(PlugboardError) -> T) throws(PlugboardError) -> T? {
        guard FileSystem.cachedReads.withLock({ $0 }) else { return nil }
        do throws(PlugboardError) {
            return try body()
        } catch where (error.underlying as? FileSystemError)?.isWouldBlock == true {
            return nil
        }
    }

    /// Removes an upload's temporary file on a blocking lane; for the error path of a
    /// streamed `put`, whose own task may be cancelled (the removal still runs).
    static func discard(_ upload: ObjectUpload) async {
        await BlockingWork.run { upload.discard() }
    }
}
