#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI

/// A plugin file read into memory after the path checks, so that everything after (the
/// pin, the ELF checks, the cache copy) works on the same bytes.
struct PluginFile {
    /// The resolved absolute path (symbolic links followed).
    let path: String
    let bytes: [UInt8]

    /// Larger plugin files are refused rather than read into memory.
    static let maxSize = 512 << 20

    /// Resolves `path` and refuses, in this order: a missing or unreadable file, one that
    /// is not a regular file, one that others can write, one whose folder others can write
    /// without the sticky bit. Group write is allowed (SwiftPM's output is group-writable
    /// under a 002 umask). `manifest` names the manifest the path is written in, for the
    /// hint; nil for a file given on the command line.
    static func read(_ path: String, plugin: String, manifest: String? = nil) throws(PlugboardError) -> PluginFile {
        guard let resolved = realPath(path) else {
            let err = errno
            if err == ENOENT || err == ENOTDIR {
                throw PlugboardError(.pluginFileNotFound, "could not access file \"\(path)\" of plugin \"\(plugin)\": \(errnoText(err))",
                    detail: "The file does not exist.",
                    hint: manifest.map { "Check the plugin's path in \($0) (relative paths are relative to the manifest's folder), or build the plugin." }
                        ?? "Check the path, or build the plugin.")
            }
            throw PlugboardError(.pluginFileUnreadable, "could not access file \"\(path)\" of plugin \"\(plugin)\": \(errnoText(err))",
                hint: "Check the permissions of the file and of every folder on its path.")
        }
        var st = stat()
        guard stat(resolved, &st) == 0 else {
            let err = errno
            throw PlugboardError(.pluginFileUnreadable, "could not access file \"\(resolved)\" of plugin \"\(plugin)\": \(errnoText(err))",
                hint: "Check the permissions of the file and of every folder on its path.")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw PlugboardError(.notRegularFile, "plugin \"\(plugin)\": \"\(resolved)\" is not a regular file",
                detail: "Expected a shared object file, found \(fileKind(st.st_mode)).",
                hint: "Point the plugin's path at the .so file itself.")
        }
        guard st.st_mode & S_IWOTH == 0 else {
            throw PlugboardError(.insecurePermissions, "access to plugin file \"\(resolved)\" is not allowed",
                detail: "The file is writable by all users (mode \(octal(st.st_mode & 0o7777))); anyone could replace the code the host runs.",
                hint: "Remove the write permission for others: chmod o-w \"\(resolved)\".")
        }
        let folder = parentFolder(resolved)
        var dst = stat()
        if stat(folder, &dst) == 0, dst.st_mode & S_IWOTH != 0, dst.st_mode & S_ISVTX == 0 {
            throw PlugboardError(.insecurePermissions, "access to plugin file \"\(resolved)\" is not allowed",
                detail: "Its folder \"\(folder)\" is writable by all users without the sticky bit (mode \(octal(dst.st_mode & 0o7777))); anyone could swap the file.",
                hint: "Move the plugin to a folder only its owner can write, or chmod o-w \"\(folder)\".")
        }
        guard Int(st.st_size) <= maxSize else {
            throw PlugboardError(.fileTooLarge, "plugin file \"\(resolved)\" is too large",
                detail: "The file is \(st.st_size) bytes; the loader accepts at most \(maxSize) bytes.",
                hint: "Check that the path names the plugin's .so file.")
        }
        return PluginFile(path: resolved, bytes: try readAll(resolved, plugin: plugin))
    }

    static func readAll(_ path: String, plugin: String) throws(PlugboardError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let err = errno
            throw PlugboardError(.pluginFileUnreadable, "could not open file \"\(path)\" of plugin \"\(plugin)\": \(errnoText(err))",
                hint: "Check the file's permissions.")
        }
        defer { close(fd) }
        return try readAll(fd: fd, path: path, plugin: plugin)
    }

    /// Everything from `fd`'s current offset to its end; `path` names it in errors.
    static func readAll(fd: Int32, path: String, plugin: String) throws(PlugboardError) -> [UInt8] {
        // One read into a buffer of the file's size (plus one byte, to notice growth),
        // instead of appending chunks: plugin files are read on every load.
        var st = stat()
        let expected = fstat(fd, &st) == 0 && st.st_mode & S_IFMT == S_IFREG ? Int(st.st_size) : 0
        var out = [UInt8](repeating: 0, count: min(expected, maxSize) + 1)
        var filled = 0
        while true {
            if filled == out.count {
                guard out.count <= maxSize else {
                    throw PlugboardError(.fileTooLarge, "plugin file \"\(path)\" is too large",
                        detail: "It grew beyond \(maxSize) bytes while being read.")
                }
                out.append(contentsOf: repeatElement(0, count: max(out.count, 1 << 16)))
            }
            let n = out.withUnsafeMutableBytes { buf in buf.baseAddress.map { Glibc.read(fd, $0 + filled, buf.count - filled) } ?? 0 }
            if n == 0 { break }
            if n < 0 {
                let err = errno
                if err == EINTR { continue }
                throw PlugboardError(.pluginFileUnreadable, "could not read file \"\(path)\" of plugin \"\(plugin)\": \(errnoText(err))")
            }
            filled += n
        }
        out.removeSubrange(filled...)
        return out
    }

    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    static func parentFolder(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func fileName(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    static func errnoText(_ code: Int32) -> String { String(cString: strerror(code)) }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }

    private static func fileKind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a folder"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }
}
