#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI

/// The content-addressed copies the loader maps: `<cache>/<sha256>.so`.
///
/// Why copy: `dlopen` of a path that is already loaded returns the old image (docs/ARCHITECTURE.md
/// fact 3), so a rebuilt plugin must get a new path; and the file mapped must be the file
/// hashed and checked, not one that could change under the same name afterwards.
///
/// Entries are published by writing a temporary file and renaming it, so concurrent
/// processes sharing a cache never see half a file. An existing entry is reused only if
/// its content still hashes to its name. The folder is created with mode 0700: only its
/// owner can change what will be loaded.
///
/// A plugin that needs shared libraries of its own beside it (a contract package) is
/// loaded through `<cache>/<sha256>.d/`, a folder of symbolic links named as the plugin
/// and its siblings were, pointing at their cached copies: the plugin's `$ORIGIN` is then
/// that folder, so its NEEDED names resolve there, and the dynamic loader, which
/// recognises a library already mapped by its inode, maps each sibling only once.
struct PluginCache: Sendable {
    let directory: String

    /// Creates the cache folder (mode 0700) if needed.
    init(directory: String) throws(PlugboardError) {
        self.directory = directory
        try Self.makeFolder(directory)
    }

    /// The entry for `bytes`, whose SHA-256 is `sha256`, writing it if it is missing or
    /// its content no longer matches.
    func store(_ bytes: [UInt8], sha256: String) throws(PlugboardError) -> String {
        let final = "\(directory)/\(sha256).so"
        // An existing entry is used only if it still holds exactly these bytes (hashed
        // above): a byte comparison is cheaper than hashing it again.
        var st = stat()
        if stat(final, &st) == 0, Int(st.st_size) == bytes.count,
           let existing = try? PluginFile.readAll(final, plugin: sha256), existing == bytes {
            // Pruning keeps the most recently used copies: this one was just used.
            _ = utimes(final, nil)
            return final
        }
        let temp = "\(directory)/.tmp-\(sha256.prefix(16))-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw cacheError("could not create \"\(temp)\"", errno) }
        var ok = bytes.withUnsafeBytes { buf -> Bool in
            guard let base = buf.baseAddress else { return true }
            var off = 0
            while off < buf.count {
                let n = write(fd, base + off, buf.count - off)
                if n < 0 { if errno == EINTR { continue }; return false }
                off += n
            }
            return true
        }
        let writeErrno = errno
        ok = ok && fchmod(fd, 0o500) == 0
        close(fd)
        guard ok, rename(temp, final) == 0 else {
            let err = ok ? errno : writeErrno
            unlink(temp)
            throw cacheError("could not write \"\(final)\"", err)
        }
        return final
    }

    /// A folder of symbolic links `<sha256>.d/` in which every `(name, target)` pair
    /// appears as `name -> target`; returns the folder's path.
    func linkFolder(sha256: String, links: [(name: String, target: String)]) throws(PlugboardError) -> String {
        let folder = "\(directory)/\(sha256).d"
        if mkdir(folder, 0o700) != 0 && errno != EEXIST { throw cacheError("could not create \"\(folder)\"", errno) }
        for link in links {
            let path = "\(folder)/\(link.name)"
            var buf = [CChar](repeating: 0, count: 4096)
            let n = readlink(path, &buf, buf.count - 1)
            if n > 0, String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == link.target { continue }
            // Replace atomically: a concurrent loader sees the old link or the new one.
            let temp = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            guard symlink(link.target, temp) == 0 else { throw cacheError("could not create link \"\(temp)\"", errno) }
            guard rename(temp, path) == 0 else {
                let err = errno
                unlink(temp)
                throw cacheError("could not create link \"\(path)\"", err)
            }
        }
        return folder
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

    private static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    /// `--cache-dir`, else `$XDG_CACHE_HOME/plugboard`, else `~/.cache/plugboard`.
    static func defaultDirectory(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/plugboard" }
        let home = environment["HOME"] ?? "/tmp"
        return "\(home)/.cache/plugboard"
    }

    private static func makeFolder(_ path: String) throws(PlugboardError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw PlugboardError(.cacheFailed, "plugin cache \"\(path)\" is not a folder",
                                     hint: "Remove it, or choose another folder with --cache-dir.")
            }
            if st.st_uid == geteuid() && st.st_mode & 0o077 != 0 { chmod(path, 0o700) }
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

    private func cacheError(_ what: String, _ err: Int32) -> PlugboardError {
        PlugboardError(.cacheFailed, "\(what) in the plugin cache: \(PluginFile.errnoText(err))",
                       detail: "The cache folder is \"\(directory)\".",
                       hint: "Check free space and permissions, or choose another folder with --cache-dir.")
    }
}
