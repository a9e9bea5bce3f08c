#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardBytes
import CPlugboardFileSystem
import PlugboardConcurrency

/// Thin wrappers over the system calls FileStorage makes, each retrying `EINTR` and
/// throwing ``FileSystemError`` with the call and the path.
///
/// Blocking: call them from ``BlockingIO``, never directly on Swift's cooperative pool.
enum FileSystem {
    /// Opens the folder at `path`, following links on the way: the way to the root is
    /// the operator's choice. Everything below it is opened relative to a folder.
    ///
    /// `cachedOnly`: fail with `EAGAIN` (``FileSystemError/wouldBlock``) instead of waiting
    /// for the disk; see ``cachedReads``.
    static func openFolder(atPath path: String, cachedOnly: Bool = false) throws(FileSystemError) -> Folder {
        while true {
            let fd = cachedOnly ? try openCached(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                : path.withCString { Glibc.open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            if fd >= 0 { return Folder(fd: fd, path: path) }
            if errno != EINTR { throw FileSystemError("open", path) }
        }
    }

    /// Opens the folder `name` of `folder`; a symbolic link there fails with `ELOOP`.
    static func openFolder(_ name: String, in folder: Folder, cachedOnly: Bool = false) throws(FileSystemError) -> Folder {
        do throws(FileSystemError) {
            return Folder(fd: try open(name, in: folder, O_RDONLY | O_DIRECTORY, cachedOnly: cachedOnly), name: name, in: folder)
        } catch where error.code == ENOTDIR {
            // Linux answers ENOTDIR, not ELOOP, for a link opened with O_DIRECTORY and
            // O_NOFOLLOW; a link must not pass for a missing folder.
            if let st = try? status(of: name, in: folder), st.st_mode & S_IFMT == S_IFLNK {
                throw FileSystemError("open", folder.path(of: name), code: ELOOP)
            }
            throw error
        }
    }

    /// Opens the entry `name` of `folder`, never through a symbolic link (`ELOOP`); the
    /// descriptor is close-on-exec.
    static func open(_ name: String, in folder: Folder, _ flags: Int32, mode: mode_t = 0,
                     cachedOnly: Bool = false) throws(FileSystemError) -> Int32 {
        while true {
            // withCString: a short name (most are) is copied to the stack, where passing
            // the String as a pointer would copy it to the heap.
            let fd = cachedOnly ? try openCached(folder.fd, name, flags | O_NOFOLLOW | O_CLOEXEC)
                : name.withCString { openat(folder.fd, $0, flags | O_NOFOLLOW | O_CLOEXEC, mode) }
            if fd >= 0 { return fd }
            if errno != EINTR { throw FileSystemError("open", folder.path(of: name)) }
        }
    }

    // MARK: reads that never wait for the disk

    /// Whether this kernel and file system answer the cached-only calls. Turned off for
    /// good at the first sign that they do not (openat2 or RESOLVE_CACHED unknown, a
    /// file system without RWF_NOWAIT): every read then hops to a blocking thread, as
    /// it did before they were tried.
    static let cachedReads = LockedValueBox(true)

    /// Opens `path` (components joined by `/`) below `folder` in one openat2 call that
    /// waits for no disk and follows no symbolic link (ELOOP), close-on-exec. The
    /// descriptor, or -1 with errno set: EAGAIN where the cache did not hold every part,
    /// ENOSYS or EINVAL where the kernel lacks the call; the caller then walks folder by
    /// folder (``open(_:in:_:mode:cachedOnly:)``), which settles each of those.
    static func openBeneathCached(_ path: String, in folder: Folder, _ flags: Int32) -> Int32 {
        while true {
            let fd = path.withCString { plugboard_openat_beneath_cached(folder.fd, $0, flags | O_NOFOLLOW | O_CLOEXEC) }
            if fd >= 0 || errno != EINTR { return fd }
        }
    }

    /// openat2 with RESOLVE_CACHED: -1 with errno set, as openat; throws
    /// ``FileSystemError/wouldBlock`` where openat could wait for the disk.
    private static func openCached(_ dirfd: Int32, _ path: String, _ flags: Int32) throws(FileSystemError) -> Int32 {
        let fd = path.withCString { plugboard_openat_cached(dirfd, $0, flags) }
        if fd >= 0 { return fd }
        let code = errno
        switch code {
        case EAGAIN:
            throw FileSystemError.wouldBlock(path)
        case ENOSYS, EINVAL, E2BIG, EPERM:
            // No openat2 or no RESOLVE_CACHED here (or a seccomp filter refusing it).
            cachedReads.withLock { $0 = false }
            throw FileSystemError.wouldBlock(path)
        default:
            errno = code
            return -1
        }
    }

    /// Writes every byte of `bytes` at the descriptor's current offset.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(FileSystemError) {
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch {
            throw FileSystemError("write", path, code: error.code)
        }
    }

    /// Writes every byte of `bytes` at `offset`, leaving the descriptor's offset alone.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(FileSystemError) {
        do {
            try DescriptorIO.writeAll(fd, bytes, at: offset)
        } catch {
            throw FileSystemError("write", path, code: error.code)
        }
    }

    /// Writes every byte of `bytes` at the descriptor's current offset.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileSystemError) {
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch {
            throw FileSystemError("write", path, code: error.code)
        }
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the
    /// number of bytes read.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int,
                     path: @autoclosure () -> String, cachedOnly: Bool = false) throws(FileSystemError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let count = min(buffer.count - done, 1 << 30)
            let n = cachedOnly ? plugboard_pread_cached(fd, base + done, count, off_t(offset + done))
                : pread(fd, base + done, count, off_t(offset + done))
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                if cachedOnly && (code == EAGAIN || code == EOPNOTSUPP || code == EINVAL || code == ENOSYS) {
                    // EAGAIN: the page is not cached (a short read before it is fine:
                    // the next call says so). The others: no RWF_NOWAIT here.
                    if code != EAGAIN { cachedReads.withLock { $0 = false } }
                    throw FileSystemError.wouldBlock(path())
                }
                throw FileSystemError("read", path(), code: code)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads `count` bytes from `offset`, or fewer when the file ends first. `path` is
    /// made only for an error (reads run for every GET).
    static func read(_ fd: Int32, count: Int, at offset: Int, path: @autoclosure () -> String,
                     cachedOnly: Bool = false) throws(FileSystemError) -> [UInt8] {
        var failure: FileSystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(FileSystemError) {
                initialized = try read(fd, into: UnsafeMutableRawBufferPointer(buffer), at: offset, path: path(),
                                       cachedOnly: cachedOnly)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// The file status of an open descriptor.
    static func status(_ fd: Int32, path: @autoclosure () -> String) throws(FileSystemError) -> stat {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileSystemError("stat", path()) }
        return st
    }

    /// The status of `path` (symbolic links followed), or nil when nothing is there.
    static func status(_ path: String) throws(FileSystemError) -> stat? {
        var st = stat()
        if stat(path, &st) == 0 { return st }
        if errno == ENOENT { return nil }
        throw FileSystemError("stat", path)
    }

    /// Flushes a file's data and metadata to stable storage.
    static func sync(_ fd: Int32, path: String) throws(FileSystemError) {
        while fsync(fd) != 0 {
            if errno != EINTR { throw FileSystemError("fsync", path) }
        }
    }

    /// Flushes a folder, so that names created, renamed or removed in it survive a crash.
    static func syncFolder(_ path: String) throws(FileSystemError) {
        let folder = try openFolder(atPath: path)
        try sync(folder)
    }

    /// Flushes an open folder.
    static func sync(_ folder: Folder) throws(FileSystemError) {
        try sync(folder.fd, path: folder.path)
    }

    /// Creates a folder; returns false when something already exists under the name.
    @discardableResult
    static func makeFolder(_ path: String, mode: mode_t) throws(FileSystemError) -> Bool {
        if mkdir(path, mode) == 0 { return true }
        if errno == EEXIST { return false }
        throw FileSystemError("mkdir", path)
    }

    /// Creates the folder `name` in `folder`; returns false when something (a link
    /// included) already has the name.
    @discardableResult
    static func makeFolder(_ name: String, in folder: Folder, mode: mode_t) throws(FileSystemError) -> Bool {
        if mkdirat(folder.fd, name, mode) == 0 { return true }
        if errno == EEXIST { return false }
        throw FileSystemError("mkdir", folder.path(of: name))
    }

    /// The status of the entry `name` of `folder` itself (a link is not followed), or
    /// nil when there is none.
    static func status(of name: String, in folder: Folder) throws(FileSystemError) -> stat? {
        var st = stat()
        if fstatat(folder.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return st }
        if errno == ENOENT { return nil }
        throw FileSystemError("stat", folder.path(of: name))
    }

    /// Renames `name` of `source` to `target` of `folder`, replacing any file (or link)
    /// there, atomically.
    static func rename(_ name: String, in source: Folder, to target: String, in folder: Folder) throws(FileSystemError) {
        if renameat(source.fd, name, folder.fd, target) != 0 { throw FileSystemError("rename", folder.path(of: target)) }
    }

    /// Gives the file `name` of `source` the name `target` in `folder` too (a hard link),
    /// failing with `EEXIST`, atomically, when something already has that name: the
    /// create-only counterpart of ``rename(_:in:to:in:)``.
    static func link(_ name: String, in source: Folder, to target: String, in folder: Folder) throws(FileSystemError) {
        if linkat(source.fd, name, folder.fd, target, 0) != 0 { throw FileSystemError("link", folder.path(of: target)) }
    }

    /// Removes the entry `name` of `folder` (a link itself, never what it points to);
    /// returns false when there was none.
    @discardableResult
    static func remove(_ name: String, in folder: Folder) throws(FileSystemError) -> Bool {
        if unlinkat(folder.fd, name, 0) == 0 { return true }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw FileSystemError("unlink", folder.path(of: name))
    }

    /// Removes the folder `name` of `folder` if it is empty; returns whether it did. Never
    /// throws: a folder that is not empty, or already gone, is simply kept or skipped.
    @discardableResult
    static func removeFolderIfEmpty(_ name: String, in folder: Folder) -> Bool {
        unlinkat(folder.fd, name, AT_REMOVEDIR) == 0
    }

    /// A directory stream over `folder`, from its first entry, on a description of its
    /// own (so that reading it moves no other reader of the folder); close it with
    /// `closedir`.
    static func entries(of folder: Folder) throws(FileSystemError) -> OpaquePointer {
        let fd = try open(".", in: folder, O_RDONLY | O_DIRECTORY)
        guard let dir = fdopendir(fd) else {
            let error = FileSystemError("opendir", folder.path)
            close(fd)
            throw error
        }
        return dir
    }

    /// The names in a folder, without `.` and `..`, as raw bytes.
    static func names(in folder: Folder) throws(FileSystemError) -> [[UInt8]] {
        let dir = try entries(of: folder)
        defer { closedir(dir) }
        var out: [[UInt8]] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw FileSystemError("readdir", folder.path) }
                return out
            }
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw -> [UInt8] in
                let base = raw.baseAddress!
                return Array(UnsafeRawBufferPointer(start: base, count: strlen(base.assumingMemoryBound(to: CChar.self))))
            }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            out.append(name)
        }
    }

    /// The process's working directory, or nil when it cannot be read (it was removed).
    static func currentDirectory() -> String? {
        guard let cwd = getcwd(nil, 0) else { return nil }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// Whether `mode` is a folder's.
    static func isFolder(_ mode: mode_t) -> Bool { mode & S_IFMT == S_IFDIR }

    /// Whether `mode` is a regular file's.
    static func isRegularFile(_ mode: mode_t) -> Bool { mode & S_IFMT == S_IFREG }

    /// What kind of thing `mode` describes, for messages: `a regular file`, `a folder`.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a folder"
        case S_IFLNK: return "a symbolic link"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }
}

/// An open folder. FileStorage reaches everything below its root through these, one name
/// at a time (`openat`, `mkdirat`, `renameat`, `unlinkat` with `O_NOFOLLOW`), never by a
/// path that the kernel would resolve through a symbolic link: a link put where one of
/// its folders was leads nowhere, so nothing lands outside the root. Closed when the last
/// reference goes.
final class Folder: Sendable {
    let fd: Int32
    /// The folder it was opened in (nil for one opened by path), and its name there: its
    /// path is made from them only for a message, not for every folder a request opens.
    private let parent: Folder?
    private let name: String

    /// A folder opened by its path.
    init(fd: Int32, path: String) {
        self.fd = fd
        self.parent = nil
        self.name = path
    }

    /// The folder `name` of `parent`, which it keeps (its descriptor too) while it lives.
    init(fd: Int32, name: String, in parent: Folder) {
        self.fd = fd
        self.parent = parent
        self.name = name
    }

    deinit { close(fd) }

    /// Its path, for messages only: no call resolves it again.
    var path: String { parent.map { $0.path(of: name) } ?? name }

    /// The path of the entry `name`, for messages.
    func path(of name: String) -> String { path + "/" + name }
}
