#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file being written in `<root>/tmp` before it is renamed into place.
///
/// Its writer holds an exclusive `flock` on it from creation until the rename is done and
/// the descriptor closed. The kernel drops the lock when the writer's process dies (also
/// under `kill -9`), so a temporary file nobody holds a lock on, and that has not been
/// touched for a while, belongs to a writer that is gone: ``removeStale(in:olderThan:)``
/// removes those at start. Temporary files are never visible as objects.
struct TemporaryFile {
    /// The suffix of every temporary file's name.
    static let suffix = ".tmp"

    /// The `tmp` folder it is in, held open until the file is renamed or discarded.
    let folder: Folder
    let name: String
    let fd: Int32

    /// Its path, for messages.
    var path: String { folder.path(of: name) }

    /// Creates a new, empty temporary file (mode 0600) in `folder` and locks it.
    static func create(in folder: Folder) throws(FileSystemError) -> TemporaryFile {
        var generator = SystemRandomNumberGenerator()
        while true {
            let random = String(generator.next() as UInt64, radix: 16)
            let name = "\(getpid())-\(random)\(suffix)"
            let fd: Int32
            do throws(FileSystemError) {
                fd = try FileSystem.open(name, in: folder, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            } catch where error.code == EEXIST {
                continue
            }
            // Cannot fail on a new file nobody else has open, except for lack of memory;
            // then the file is merely not protected from a cleaner for the few seconds of
            // its grace period, which removeStale also respects.
            _ = flock(fd, LOCK_EX | LOCK_NB)
            return TemporaryFile(folder: folder, name: name, fd: fd)
        }
    }

    /// Closes the descriptor (dropping the lock) and removes the file if it is still there.
    func discard() {
        unlinkat(folder.fd, name, 0)
        close(fd)
    }

    /// Removes the temporary files in `folder` that no live writer holds and that were
    /// last modified more than `seconds` ago; returns how many it removed.
    ///
    /// The age check covers the instant between a writer's `open` and its `flock`.
    static func removeStale(in folder: Folder, olderThan seconds: Int) -> Int {
        guard let names = try? FileSystem.names(in: folder) else { return 0 }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var removed = 0
        for name in names where name.count > suffix.utf8.count && name.reversed().starts(with: suffix.utf8.reversed()) {
            let name = String(decoding: name, as: UTF8.self)
            guard let fd = try? FileSystem.open(name, in: folder, O_RDONLY) else { continue }
            defer { close(fd) }
            guard let st = try? FileSystem.status(fd, path: folder.path(of: name)), FileSystem.isRegularFile(st.st_mode),
                  Int(now.tv_sec) - Int(st.st_mtim.tv_sec) > seconds,
                  flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if unlinkat(folder.fd, name, 0) == 0 { removed += 1 }
        }
        return removed
    }
}
