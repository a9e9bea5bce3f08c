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

    /// Removes an upload's temporary file on a blocking lane; for the error path of a
    /// streamed `put`, whose own task may be cancelled (the removal still runs).
    static func discard(_ upload: ObjectUpload) async {
        await BlockingWork.run { upload.discard() }
    }
}
