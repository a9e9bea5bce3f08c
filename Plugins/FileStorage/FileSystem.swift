#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Thin wrappers over the system calls FileStorage makes, each retrying `EINTR` and
/// throwing ``FileSystemError`` with the call and the path.
///
/// Blocking: call them from ``BlockingIO``, never directly on Swift's cooperative pool.
enum FileSystem {
    /// Opens `path`; the descriptor is close-on-exec.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(FileSystemError) -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno != EINTR { throw FileSystemError("open", path) }
        }
    }

    /// Writes every byte of `bytes` at the descriptor's current offset.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(FileSystemError) {
        guard var next = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let n = Glibc.write(fd, next, min(remaining, 1 << 30))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileSystemError("write", path)
            }
            if n == 0 { throw FileSystemError("write", path, code: EIO) }
            next += n
            remaining -= n
        }
    }

    /// Writes every byte of `bytes` at the descriptor's current offset.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileSystemError) {
        var failure: FileSystemError?
        bytes.withUnsafeBytes { raw in
            do throws(FileSystemError) {
                try writeAll(fd, raw, path: path)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the
    /// number of bytes read.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int,
                     path: String) throws(FileSystemError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, base + done, min(buffer.count - done, 1 << 30), off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileSystemError("read", path)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads `count` bytes from `offset`, or fewer when the file ends first.
    static func read(_ fd: Int32, count: Int, at offset: Int, path: String) throws(FileSystemError) -> [UInt8] {
        var failure: FileSystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(FileSystemError) {
                initialized = try read(fd, into: UnsafeMutableRawBufferPointer(buffer), at: offset, path: path)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// The file status of an open descriptor.
    static func status(_ fd: Int32, path: String) throws(FileSystemError) -> stat {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileSystemError("stat", path) }
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
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try sync(fd, path: path)
    }

    /// Creates a folder; returns false when something already exists under the name.
    @discardableResult
    static func makeFolder(_ path: String, mode: mode_t) throws(FileSystemError) -> Bool {
        if mkdir(path, mode) == 0 { return true }
        if errno == EEXIST { return false }
        throw FileSystemError("mkdir", path)
    }

    /// Renames `source` to `target`, replacing any file there, atomically.
    static func rename(_ source: String, to target: String) throws(FileSystemError) {
        if Glibc.rename(source, target) != 0 { throw FileSystemError("rename", target) }
    }

    /// Removes a file; returns false when there was none (or a folder on the way is missing).
    @discardableResult
    static func remove(_ path: String) throws(FileSystemError) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw FileSystemError("unlink", path)
    }

    /// Removes a folder if it is empty; returns whether it did. Never throws: a folder that
    /// is not empty, or already gone, is simply kept or skipped.
    @discardableResult
    static func removeFolderIfEmpty(_ path: String) -> Bool {
        rmdir(path) == 0
    }

    /// The names in a folder, without `.` and `..`, as raw bytes; empty when the folder does
    /// not exist (it may have been removed by a concurrent delete).
    static func names(in folder: String) throws(FileSystemError) -> [[UInt8]] {
        guard let dir = opendir(folder) else {
            if errno == ENOENT || errno == ENOTDIR { return [] }
            throw FileSystemError("opendir", folder)
        }
        defer { closedir(dir) }
        var out: [[UInt8]] = []
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw FileSystemError("readdir", folder) }
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

    /// The part of `path` before its last `/`: the folder that holds it.
    static func parent(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }
}
