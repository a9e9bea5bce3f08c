#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardConcurrency

/// The root folder, kept open between operations.
///
/// Opening the root by its path walks every component of that path: it was the dearest
/// of the three opens a GET made. It is opened again from the path at most
/// ``reopenSeconds`` after it was last opened, so a root replaced under a running server
/// (moved away, a backup restored in its place, another volume mounted there) is the one
/// used within that time, as it would be if every operation opened it; until then
/// operations go on in the folder that was the root. A root that cannot be opened any more
/// fails every operation, as before, and nothing is held: the next one tries the path
/// again. Only the root is held: every folder below it is still opened by name for each
/// operation, without following a link, so a link put in place of `objects/` or `tmp/`
/// is refused at once.
final class HeldRoot: Sendable {
    static let reopenSeconds = 1.0

    let path: String
    private let state = LockedValueBox<(folder: Folder, openedAt: Double)?>(nil)

    init(path: String) {
        self.path = path
    }

    /// The root folder.
    func folder(cachedOnly: Bool = false) throws(FileSystemError) -> Folder {
        let now = Self.now()
        if let held = state.withLock({ $0 }), now - held.openedAt < Self.reopenSeconds { return held.folder }
        // Opened outside the lock: a reopen that waits for the disk holds no other operation up.
        do throws(FileSystemError) {
            let folder = try FileSystem.openFolder(atPath: path, cachedOnly: cachedOnly)
            state.withLock { $0 = (folder, now) }
            return folder
        } catch {
            state.withLock { $0 = nil }
            throw error
        }
    }

    /// Lets go of the held folder (at stop); an operation after it opens it again.
    func reset() {
        state.withLock { $0 = nil }
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
