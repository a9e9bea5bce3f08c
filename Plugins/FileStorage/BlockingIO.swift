import Dispatch
import PlugboardAPI

/// Runs blocking file-system work on Dispatch's threads rather than on Swift's
/// cooperative pool, which has one thread per core (two here): a 64 MiB write and its
/// `fsync` must not stall every other task of the host.
enum BlockingIO {
    private static let queue = DispatchQueue(label: "plugboard.filestorage.io", attributes: .concurrent)

    /// Runs `body` on an I/O thread and returns its result.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws(PlugboardError) -> T) async throws(PlugboardError) -> T {
        let result: Result<T, PlugboardError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(PlugboardError) -> T in try body() })
            }
        }
        return try result.get()
    }
}
