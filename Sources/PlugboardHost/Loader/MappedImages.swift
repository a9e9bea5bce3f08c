#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency

/// The plugin images this process has mapped: they can never be unmapped (docs/ARCHITECTURE.md
/// fact 2), so every hot swap to a new build adds one for the life of the process, and
/// the host reports how many there are and what they weigh.
///
/// Each cached file mapped is also held open with a shared `flock`, so that pruning the
/// cache at start-up (``PluginCache/prune(keeping:)``) can tell, by trying an exclusive
/// lock, which copies no running process of this host maps.
public final class MappedImages: Sendable {
    public static let shared = MappedImages()

    public struct Image: Sendable {
        public let sha256: String
        public let bytes: Int
        /// Every plugin name loaded from it.
        public var plugins: [String]
    }

    private let images = LockedValueBox<[String: Image]>([:])
    /// The order images were first mapped in, for reports.
    private let order = LockedValueBox<[String]>([])

    /// Records a mapped file (the loader calls it after each successful `dlopen`); a file
    /// mapped again (the same bytes) is counted once.
    func record(path: String, sha256: String, bytes: Int, plugin: String) {
        let isNew = images.withLock { all -> Bool in
            if var known = all[sha256] {
                if !known.plugins.contains(plugin) { known.plugins.append(plugin) }
                all[sha256] = known
                return false
            }
            all[sha256] = Image(sha256: sha256, bytes: bytes, plugins: [plugin])
            return true
        }
        guard isNew else { return }
        order.withLock { $0.append(sha256) }
        // Held for the life of the process, like the mapping itself.
        let file = PluginFile.realPath(path) ?? path
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        if fd >= 0 { _ = flock(fd, LOCK_SH) }
    }

    /// How many distinct images are mapped.
    public var count: Int { images.withLock { $0.count } }
    /// Their total size in bytes.
    public var totalBytes: Int { images.withLock { $0.values.reduce(0) { $0 + $1.bytes } } }
    /// Every image, in the order it was first mapped.
    public var all: [Image] {
        let keys = order.withLock { $0 }
        return images.withLock { all in keys.compactMap { all[$0] } }
    }
}
