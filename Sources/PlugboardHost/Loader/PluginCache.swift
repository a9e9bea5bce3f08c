#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes

/// The content-addressed copies the loader maps: `<cache>/<sha256>.so`.
///
/// Why copy: `dlopen` of a path that is already loaded returns the old image (docs/ARCHITECTURE.md
/// fact 3), so a rebuilt plugin must get a new path; and the file mapped must be the file
/// hashed and checked, not one that could change under the same name afterwards.
///
/// `dlopen` takes a path, not a descriptor (glibc matches an already-loaded *name* first,
/// so `/proc/self/fd/N` with a reused number returns an old image), so the bytes it maps
/// are the verified bytes only if nobody else can change what the path names between the
/// check and the `dlopen`. Hence:
/// - the cache folder, and every folder the loader makes in it, is owned by the effective
///   user and writable by nobody else, and so is every folder above it unless it has the
///   sticky bit and is owned by root or that user; otherwise `loader.cache_untrusted`;
/// - no link inside the cache is followed: every entry is opened with `O_NOFOLLOW`
///   relative to a descriptor of the folder, and a link found where an entry or a `.d`
///   folder should be is removed and the entry rebuilt;
/// - a copy is written by the loader itself to a temporary name (`O_EXCL`, `O_NOFOLLOW`),
///   made mode 0500, read back through the descriptor it was written with and compared with
///   the bytes that were hashed, then renamed into place (concurrent processes never see half a file);
/// - an existing entry is reused only if, opened with `O_NOFOLLOW`, it is a regular file
///   of the user's, mode 0500, holding exactly the bytes that were hashed.
///
/// A plugin that needs shared libraries of its own beside it (a contract package) is
/// loaded through `<cache>/<sha256>.d/`, a folder of symbolic links named as the plugin
/// and its siblings were, pointing at their cached copies (`../<sha256>.so`, nothing
/// else: any other entry is removed): the plugin's `$ORIGIN` is then that folder, so its
/// NEEDED names resolve there, and the dynamic loader, which recognises a library already
/// mapped by its inode, maps each sibling only once.
struct PluginCache: Sendable {
    /// The folder's real path: what the loader checked is what `dlopen` walks.
    let directory: String

    /// Creates the cache folder (mode 0700, and its missing parents) if needed, and
    /// checks that only the effective user can change it.
    init(directory: String) throws(PlugboardError) {
        try Self.makeFolder(directory)
        guard let real = PluginFile.realPath(directory) else {
            let err = errno
            throw PlugboardError(.cacheFailed, "could not resolve plugin cache \"\(directory)\": \(PluginFile.errnoText(err))",
                                 hint: "Choose a folder of your own with --cache-dir.")
        }
        self.directory = real
        try Self.checkAncestors(of: real)
        close(try openFolder())
    }

    /// The entry for `bytes`, whose SHA-256 is `sha256`, writing it if it is missing,
    /// or is not a regular file of the user's with mode 0500 and exactly these bytes.
    func store(_ bytes: [UInt8], sha256: String) throws(PlugboardError) -> String {
        let folder = try openFolder()
        defer { close(folder) }
        let name = "\(sha256).so"
        let final = "\(directory)/\(name)"
        // Anything else under the name (a link, a file of someone else's, another mode,
        // other bytes) is never used nor followed: the rename below replaces the name.
        if try isReusable(folder, name, bytes: bytes) {
            // Pruning keeps the most recently used copies: this one was just used.
            _ = utimensat(folder, name, nil, AT_SYMLINK_NOFOLLOW)
            return final
        }
        let temp = ".tmp-\(sha256.prefix(16))-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = openat(folder, temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw cacheError("could not create \"\(directory)/\(temp)\"", errno) }
        do throws(PlugboardError) {
            defer { close(fd) }
            try Self.writeAll(fd, bytes, path: "\(directory)/\(temp)", error: cacheError)
            guard fchmod(fd, 0o500) == 0 else { throw cacheError("could not write \"\(final)\"", errno) }
            // What is renamed into place is what this descriptor reads back: the very bytes
            // that were hashed (compared, not hashed again: the file is hashed once).
            guard lseek(fd, 0, SEEK_SET) == 0 else { throw cacheError("could not write \"\(final)\"", errno) }
            let written = try PluginFile.readAll(fd: fd, path: final, plugin: sha256)
            guard written == bytes else {
                throw PlugboardError(.cacheFailed, "the copy written to the plugin cache does not match its SHA-256",
                    detail: "Expected the \(bytes.count) bytes hashed as \(sha256) in \"\(final)\", read back \(written.count) bytes that differ.",
                    hint: "Check the file system of \"\(directory)\", or choose another folder with --cache-dir.")
            }
            guard renameat(folder, temp, folder, name) == 0 else { throw cacheError("could not write \"\(final)\"", errno) }
        } catch {
            unlinkat(folder, temp, 0)
            throw error
        }
        return final
    }

    private func isReusable(_ folder: Int32, _ name: String, bytes: [UInt8]) throws(PlugboardError) -> Bool {
        // O_NONBLOCK: a FIFO in place of the entry must not hang the open.
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let err = errno
            if err == ENOENT || err == ELOOP { return false }
            throw cacheError("could not open \"\(directory)/\(name)\"", err)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(),
              st.st_mode & 0o7777 == 0o500, Int(st.st_size) == bytes.count else { return false }
        // The bytes hashed above, compared through this descriptor: cheaper than hashing again.
        guard let existing = try? PluginFile.readAll(fd: fd, path: name, plugin: name), existing == bytes else { return false }
        return true
    }

    /// A folder `<sha256>.d/` of symbolic links, exactly one `name -> target` for every
    /// pair of `links` (each target `../<sha256>.so`); returns the folder's path.
    func linkFolder(sha256: String, links: [(name: String, target: String)]) throws(PlugboardError) -> String {
        let cache = try openFolder()
        defer { close(cache) }
        let name = "\(sha256).d"
        let path = "\(directory)/\(name)"
        let folder = try openLinkFolder(cache, name)
        defer { close(folder) }
        try Self.checkOwned(folder, path: path)
        let wanted = Dictionary(links.map { ($0.name, $0.target) }, uniquingKeysWith: { first, _ in first })
        // Anything else in it would be found through the plugin's $ORIGIN: only links to
        // cache entries stay.
        for entry in Self.entries(folder) where wanted[entry] == nil && !Self.isEntryLink(Self.readLink(folder, entry)) {
            if unlinkat(folder, entry, 0) != 0 && unlinkat(folder, entry, AT_REMOVEDIR) != 0 {
                throw cacheError("could not remove \"\(path)/\(entry)\"", errno)
            }
        }
        for (linkName, target) in links {
            if Self.readLink(folder, linkName) == target { continue }
            // Replace atomically: a concurrent loader sees the old link or the new one.
            let temp = "\(linkName).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            guard symlinkat(target, folder, temp) == 0 else { throw cacheError("could not create link \"\(path)/\(temp)\"", errno) }
            guard renameat(folder, temp, folder, linkName) == 0 else {
                let err = errno
                unlinkat(folder, temp, 0)
                throw cacheError("could not create link \"\(path)/\(linkName)\"", err)
            }
        }
        return path
    }

    /// Opens `<sha256>.d` without following a link; a link or a file in its place is
    /// removed and the folder made anew.
    private func openLinkFolder(_ cache: Int32, _ name: String) throws(PlugboardError) -> Int32 {
        for _ in 0..<3 {
            let fd = openat(cache, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return fd }
            let err = errno
            switch err {
            case ENOENT:
                if mkdirat(cache, name, 0o700) != 0 && errno != EEXIST {
                    throw cacheError("could not create \"\(directory)/\(name)\"", errno)
                }
            case ELOOP, ENOTDIR:
                if unlinkat(cache, name, 0) != 0 && errno != ENOENT {
                    throw cacheError("could not remove \"\(directory)/\(name)\"", errno)
                }
            default:
                throw cacheError("could not open \"\(directory)/\(name)\"", err)
            }
        }
        throw cacheError("could not create \"\(directory)/\(name)\"", EEXIST)
    }

    /// `../<64 hex digits>.so`: a link to a cache entry, the only kind a `.d` folder holds.
    static func isEntryLink(_ target: String?) -> Bool {
        guard let target, target.hasPrefix("../"), target.hasSuffix(".so") else { return false }
        let digest = target.utf8.dropFirst(3).dropLast(3)
        return digest.count == 64 && digest.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private static func readLink(_ folder: Int32, _ name: String) -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlinkat(folder, name, &buf, buf.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The names in the folder at `path`, `.` and `..` left out; none when it cannot be read.
    static func fileNames(in path: String) -> [String] {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return entries(fd)
    }

    private static func entries(_ folder: Int32) -> [String] {
        let copy = dup(folder)
        guard copy >= 0, let dir = fdopendir(copy) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let entry = readdir(dir) {
            let n = name(of: entry)
            if n != "." && n != ".." { out.append(n) }
        }
        return out
    }

    /// Removes cached copies that no process of this host maps, least recently used
    /// first, until at most `keep` of them remain; returns the names removed.
    ///
    /// A process that maps a copy holds a shared `flock` on it (``MappedImages``), so a
    /// copy on which an exclusive lock succeeds is mapped by nobody. Its `.d` folder of
    /// links goes with it. Copies in use are never removed, whatever `keep` says.
    @discardableResult
    func prune(keeping keep: Int) -> [String] {
        var unused: [(name: String, used: Int)] = []
        guard let dir = opendir(directory) else { return [] }
        while let entry = readdir(dir) {
            let name = Self.name(of: entry)
            guard name.hasSuffix(".so"), name.utf8.count == 67 else { continue }
            let path = "\(directory)/\(name)"
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            unused.append((name, Int(st.st_mtim.tv_sec)))
        }
        closedir(dir)
        guard unused.count > keep else { return [] }
        let victims = unused.sorted { $0.used < $1.used }.prefix(unused.count - keep).map(\.name)
        for name in victims {
            unlink("\(directory)/\(name)")
            let links = "\(directory)/\(name.dropLast(3)).d"
            if let d = opendir(links) {
                while let entry = readdir(d) {
                    let n = Self.name(of: entry)
                    if n != "." && n != ".." { unlink("\(links)/\(n)") }
                }
                closedir(d)
                rmdir(links)
            }
        }
        return victims
    }

    static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    /// `--cache-dir`, else `$XDG_CACHE_HOME/plugboard`, else `$HOME/.cache/plugboard`;
    /// never a shared folder such as `/tmp`, where another user could prepare it.
    ///
    /// - Throws: `loader.cache_dir_unset` when neither variable holds an absolute path.
    static func defaultDirectory(environment: [String: String]) throws(PlugboardError) -> String {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/plugboard" }
        if let home = environment["HOME"], home.hasPrefix("/") { return "\(home)/.cache/plugboard" }
        throw PlugboardError(.cacheDirectoryUnset, "no folder for the plugin cache",
            detail: "Expected HOME or XDG_CACHE_HOME to name an absolute path, found \(environment["HOME"] == nil ? "HOME unset" : "HOME not absolute") and \(environment["XDG_CACHE_HOME"] == nil ? "XDG_CACHE_HOME unset" : "XDG_CACHE_HOME not absolute").",
            hint: "Set HOME or XDG_CACHE_HOME, or pass --cache-dir with a folder only this user can write.")
    }

    /// `configured` (`--cache-dir`) if given, else the default.
    static func directory(_ configured: String?, environment: [String: String]) throws(PlugboardError) -> String {
        if let configured { return configured }
        return try defaultDirectory(environment: environment)
    }

    /// Opens the cache folder itself, without following a link, and checks it.
    func openFolder() throws(PlugboardError) -> Int32 {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let err = errno
            throw PlugboardError(.cacheFailed, "could not open plugin cache \"\(directory)\": \(PluginFile.errnoText(err))",
                                 hint: "Choose a folder of your own with --cache-dir.")
        }
        do throws(PlugboardError) {
            try Self.checkOwned(fd, path: directory)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Refuses a folder that is not the effective user's, or that others can write.
    private static func checkOwned(_ fd: Int32, path: String) throws(PlugboardError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw PlugboardError(.cacheFailed, "could not examine plugin cache \"\(path)\": \(PluginFile.errnoText(errno))")
        }
        let user = geteuid()
        guard st.st_uid == user else {
            throw PlugboardError(.cacheUntrusted, "plugin cache folder \"\(path)\" is not owned by the user running plugboard",
                detail: "Expected a folder owned by user \(user), found one owned by user \(st.st_uid), who could change what the host loads.",
                hint: "Remove it (rm -r \"\(path)\") so that plugboard makes its own, or choose a folder of your own with --cache-dir.")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw PlugboardError(.cacheUntrusted, "plugin cache folder \"\(path)\" can be written by other users",
                detail: "Expected a folder only its owner can write (mode 0700), found mode \(octal(st.st_mode & 0o7777)).",
                hint: "Run: chmod go-w \"\(path)\", and remove whatever you did not put in it; or choose another folder with --cache-dir.")
        }
    }

    /// Refuses a cache below a folder that someone else could rename it out of: one
    /// owned by another user than root or the effective user, or one that others can
    /// write without the sticky bit.
    private static func checkAncestors(of path: String) throws(PlugboardError) {
        var folder = PluginFile.parentFolder(path)
        while true {
            var st = stat()
            if stat(folder, &st) == 0 {
                let foreign = st.st_uid != 0 && st.st_uid != geteuid()
                let openToOthers = st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0
                if foreign || openToOthers {
                    throw PlugboardError(.cacheUntrusted, "plugin cache \"\(path)\" lies in a folder other users can change",
                        detail: "Expected every folder above it to be owned by root or user \(geteuid()) and writable by nobody else (or sticky), found \"\(folder)\" owned by user \(st.st_uid) with mode \(octal(st.st_mode & 0o7777)).",
                        hint: "Choose a cache folder under your own home with --cache-dir, or run: chmod go-w \"\(folder)\".")
                }
            }
            if folder == "/" || folder == "." { return }
            folder = PluginFile.parentFolder(folder)
        }
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String,
                                 error: (String, Int32) -> PlugboardError) throws(PlugboardError) {
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch let failure {
            throw error("could not write \"\(path)\"", failure.code)
        }
    }

    private static func makeFolder(_ path: String) throws(PlugboardError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw PlugboardError(.cacheFailed, "plugin cache \"\(path)\" is not a folder",
                                     hint: "Remove it, or choose another folder with --cache-dir.")
            }
            return
        }
        let parent = PluginFile.parentFolder(path)
        if parent != path && parent != "/" && parent != "." { try makeFolder(parent) }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            let err = errno
            throw PlugboardError(.cacheFailed, "could not create plugin cache \"\(path)\": \(PluginFile.errnoText(err))",
                                 hint: "Choose a writable folder with --cache-dir.")
        }
    }

    func cacheError(_ what: String, _ err: Int32) -> PlugboardError {
        PlugboardError(.cacheFailed, "\(what) in the plugin cache: \(PluginFile.errnoText(err))",
                       detail: "The cache folder is \"\(directory)\".",
                       hint: "Check free space and permissions, or choose another folder with --cache-dir.")
    }
}
