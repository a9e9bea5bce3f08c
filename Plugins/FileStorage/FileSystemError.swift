#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI

/// A system call that failed: which one, on which path, and its `errno`.
///
/// The low-level helpers in ``FileSystem`` throw it; ``FileStorage`` turns it into a
/// `PlugboardError` that says which object or folder was concerned
/// (``storageError(_:root:)``) and keeps it as `underlying`.
struct FileSystemError: Error, Sendable, CustomStringConvertible {
    /// The call, as a verb for messages: `open`, `write`, `rename`, ...
    let operation: String
    /// The path it was given.
    let path: String
    /// The `errno` it left.
    let code: Int32

    /// Captures the current `errno`.
    init(_ operation: String, _ path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// A cached-only call (``FileSystem/cachedReads``) that would have waited for the
    /// disk: the caller does the work again on a blocking thread. Never reported.
    static func wouldBlock(_ path: String) -> FileSystemError { FileSystemError("read", path, code: EAGAIN) }

    var isWouldBlock: Bool { code == EAGAIN }

    /// The system's text for the code: `No space left on device`.
    var text: String { String(cString: strerror(code)) }

    /// The symbolic name of the code when it is a common one (`ENOSPC`), else `errno 28`.
    var codeName: String {
        switch code {
        case ENOSPC: return "ENOSPC"
        case EDQUOT: return "EDQUOT"
        case EACCES: return "EACCES"
        case EPERM: return "EPERM"
        case EROFS: return "EROFS"
        case ENOENT: return "ENOENT"
        case ENOTDIR: return "ENOTDIR"
        case EISDIR: return "EISDIR"
        case EEXIST: return "EEXIST"
        case ELOOP: return "ELOOP"
        case EMFILE: return "EMFILE"
        case ENFILE: return "ENFILE"
        case ENAMETOOLONG: return "ENAMETOOLONG"
        case EIO: return "EIO"
        case EXDEV: return "EXDEV"
        case ENOMEM: return "ENOMEM"
        default: return "errno \(code)"
        }
    }

    /// `rename of "/srv/a" failed: No such file or directory (ENOENT)`.
    var description: String {
        "\(operation) of \(FileStorageText.quote(path)) failed: \(text) (\(codeName))"
    }

    /// The `PlugboardError` a storage method reports for this failure.
    ///
    /// Permission problems (`EACCES`, `EPERM`, a read-only file system) are
    /// `storage.access_denied`: retrying does not help until the configuration changes.
    /// Everything else is `storage.failed`. Full disks, permission problems and a symbolic
    /// link found below the root carry a hint saying what to do.
    ///
    /// - Parameters:
    ///   - action: What could not be done, lower-case: `could not write object "a/b"`.
    ///   - root: The storage's root folder, for hints.
    func storageError(_ action: String, root: String) -> PlugboardError {
        let detail = "The \(operation) of \(FileStorageText.quote(path)) failed with \(codeName)."
        let rootText = FileStorageText.quote(root)
        switch code {
        case ENOSPC, EDQUOT:
            return PlugboardError(
                .storageFailed, "\(action): \(text)", detail: detail,
                hint: "Free space (or raise the quota) on the file system that holds FileStorage's root \(rootText), or point \"root\" at another file system.",
                underlying: self)
        case EACCES, EPERM:
            return PlugboardError(
                .storageAccessDenied, "\(action): \(text)", detail: detail,
                hint: "Make FileStorage's root \(rootText) and everything in it readable and writable by the host's user (it creates them with mode 0700).",
                underlying: self)
        case EROFS:
            return PlugboardError(
                .storageAccessDenied, "\(action): \(text)", detail: detail,
                hint: "The file system that holds \(rootText) is mounted read-only; remount it read-write or point \"root\" at another folder.",
                underlying: self)
        case ELOOP where path != root:
            // Only opens below the root refuse links (O_NOFOLLOW); the way to the root follows them.
            return PlugboardError(
                .storageFailed, "\(action): \(FileStorageText.quote(path)) is a symbolic link", detail: detail + " FileStorage follows no symbolic link below its root, so nothing is read or written through it.",
                hint: "Something replaced a folder or file under FileStorage's root \(rootText) with a symbolic link; put the real folder back in its place (or remove the link), or point \"root\" at the folder the link leads to.",
                underlying: self)
        case EMFILE, ENFILE:
            return PlugboardError(
                .storageFailed, "\(action): \(text)", detail: detail,
                hint: "The process has too many open files; raise the limit (ulimit -n) or lower the number of concurrent requests.",
                underlying: self)
        default:
            return PlugboardError(.storageFailed, "\(action): \(text)", detail: detail, underlying: self)
        }
    }
}
