#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI

extension ObjectFiles {
    /// What ``prepare(plugin:)`` did.
    struct Preparation: Sendable {
        /// Whether the root folder was created.
        var createdRoot: Bool
        /// How many temporary files of dead writers were removed.
        var removedTemporaryFiles: Int
    }

    /// Makes the root ready: creates it (and any missing parent) with mode 0700, checks
    /// that it is a folder holding FileStorage's layout (or nothing), writes the format
    /// marker, creates `objects` and `tmp`, and removes temporary files left by writers
    /// that died.
    ///
    /// A folder that holds other files and no marker is refused rather than written into:
    /// a `root` pointing at the wrong folder (a home folder, `/`) must not become a store.
    ///
    /// With `checkOnly` (`plugboard check`: ``PluginRegistrar/checkOnly``) nothing is
    /// created, written or removed: the same refusals, and for what does not exist yet, a
    /// check that its folder would take it; ``Preparation/createdRoot`` then says whether
    /// the root would be created.
    ///
    /// - Parameters:
    ///   - plugin: The plugin's name in the manifest, for messages.
    ///   - checkOnly: Check what would be done, and do none of it.
    /// - Throws: `plugin.config_invalid` naming the path when the root (or a folder on its
    ///   way) is not a folder, holds other files, or holds another format, or when
    ///   `objects` or `tmp` is a symbolic link (nothing below the root is reached through a
    ///   link); `storage.access_denied` or `storage.failed` when it cannot be created or read.
    func prepare(plugin: String, checkOnly: Bool = false) throws(PlugboardError) -> Preparation {
        let createdRoot = try makeRoot(plugin: plugin, creating: !checkOnly)
        if checkOnly && createdRoot { return Preparation(createdRoot: true, removedTemporaryFiles: 0) }
        let action = "could not prepare FileStorage root \(FileStorageText.quote(root))"
        let rootFolder: Folder
        do throws(FileSystemError) {
            rootFolder = try FileSystem.openFolder(atPath: root)
        } catch {
            throw error.storageError(action, root: root)
        }
        try checkMarker(in: rootFolder, plugin: plugin, writing: !checkOnly)
        for name in ["objects", "tmp"] {
            if let st = try? FileSystem.status(of: name, in: rootFolder), st.st_mode & S_IFMT == S_IFLNK {
                throw linkedFolder(name, in: rootFolder, plugin: plugin)
            }
        }
        if checkOnly {
            do throws(FileSystemError) {
                for name in ["objects", "tmp"] {
                    if let st = try FileSystem.status(of: name, in: rootFolder), !FileSystem.isFolder(st.st_mode) {
                        throw FileSystemError("mkdir", rootFolder.path(of: name), code: ENOTDIR)
                    }
                }
                try Self.checkWritable(root)
            } catch {
                throw error.storageError(action, root: root)
            }
            return Preparation(createdRoot: false, removedTemporaryFiles: 0)
        }
        let temporaryFiles: Folder
        do throws(FileSystemError) {
            var created = false
            for name in ["objects", "tmp"] {
                if try FileSystem.makeFolder(name, in: rootFolder, mode: 0o700) {
                    created = true
                } else if let st = try FileSystem.status(of: name, in: rootFolder), !FileSystem.isFolder(st.st_mode) {
                    throw FileSystemError("mkdir", rootFolder.path(of: name), code: ENOTDIR)
                }
            }
            if created && sync { try FileSystem.sync(rootFolder) }
            temporaryFiles = try FileSystem.openFolder("tmp", in: rootFolder)
        } catch {
            throw error.storageError(action, root: root)
        }
        let removed = TemporaryFile.removeStale(in: temporaryFiles, olderThan: Self.staleTemporaryFileSeconds)
        return Preparation(createdRoot: createdRoot, removedTemporaryFiles: removed)
    }

    /// A root whose `objects` or `tmp` is a symbolic link: refused, since writing through
    /// it would put objects outside the root.
    private func linkedFolder(_ name: String, in rootFolder: Folder, plugin: String) -> PlugboardError {
        var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlinkat(rootFolder.fd, name, &target, target.count - 1)
        let found = length >= 0
            ? "a symbolic link to \(FileStorageText.quote(String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)))"
            : "a symbolic link"
        return PlugboardError(
            .configInvalid, "FileStorage root \(FileStorageText.quote(root)) holds a symbolic link where its folder \"\(name)\" belongs",
            detail: "Expected \(FileStorageText.quote(rootFolder.path(of: name))) to be a folder inside the root; found \(found). FileStorage follows no link below its root, so that no object lands outside it.",
            hint: "Replace the link with a real folder (move what it points to into its place), or point \"root\" of plugin \"\(plugin)\" at a folder whose objects/ and tmp/ are its own.")
    }

    /// Creates the root and its missing parents (mode 0700); returns whether it created
    /// the root. Not `creating`: stops at the first folder missing, once its parent is
    /// found writable, and returns true (the root would be created).
    private func makeRoot(plugin: String, creating: Bool) throws(PlugboardError) -> Bool {
        var path = ""
        var created = false
        let components = root.split(separator: "/", omittingEmptySubsequences: true)
        for (index, component) in components.enumerated() {
            let parent = path.isEmpty ? "/" : path
            path += "/" + component
            let isRoot = index == components.count - 1
            let found: stat?
            do throws(FileSystemError) {
                // stat first: mkdir of an existing folder one may not write in can fail
                // with EACCES or EROFS rather than EEXIST.
                if let existing = try FileSystem.status(path) {
                    found = existing
                } else if !creating {
                    try Self.checkWritable(parent)
                    return true
                } else if try FileSystem.makeFolder(path, mode: 0o700) {
                    created = isRoot
                    if sync { try FileSystem.syncFolder(parent) }
                    continue
                } else {
                    found = try FileSystem.status(path)
                }
            } catch {
                throw error.storageError("could not create FileStorage root \(FileStorageText.quote(root))", root: root)
            }
            if let found, !FileSystem.isFolder(found.st_mode) {
                throw notAFolder(path, kind: FileSystem.kind(found.st_mode), isRoot: isRoot, plugin: plugin)
            }
        }
        return created
    }

    /// Refuses a folder this process could not create entries in, as `mkdir` there would.
    private static func checkWritable(_ folder: String) throws(FileSystemError) {
        guard access(folder, W_OK | X_OK) == 0 else { throw FileSystemError("mkdir", folder, code: errno) }
    }

    /// Checks the format marker, or writes it into a root that holds nothing else (when
    /// `writing`; otherwise only checks that the root holds nothing else).
    private func checkMarker(in rootFolder: Folder, plugin: String, writing: Bool) throws(PlugboardError) {
        let action = "could not open FileStorage root \(FileStorageText.quote(root))"
        do {
            if try FileSystem.status(of: Self.markerName, in: rootFolder) != nil {
                let fd = try FileSystem.open(Self.markerName, in: rootFolder, O_RDONLY)
                defer { close(fd) }
                let content = try FileSystem.read(fd, count: 256, at: 0, path: markerPath)
                guard content == Array(Self.markerContent.utf8) else {
                    let found = String(decoding: content.prefix(64), as: UTF8.self)
                    throw PlugboardError(
                        .configInvalid, "FileStorage root \(FileStorageText.quote(root)) holds another format",
                        detail: "Its marker \(Self.markerName) reads \(FileStorageText.quote(found)); this plugin reads \(FileStorageText.quote(Self.markerContent)).",
                        hint: "Use the FileStorage version that wrote this folder, or point \"root\" of plugin \"\(plugin)\" at another folder.")
                }
                return
            }
            // A concurrent start may have written the marker's temporary file, or the
            // marker and the folders since the check above: those names are ours.
            let ours = [Array("objects".utf8), Array("tmp".utf8)]
            let foreign = try FileSystem.names(in: rootFolder).filter {
                !$0.starts(with: Array(Self.markerName.utf8)) && !ours.contains($0)
            }
            if let first = foreign.first {
                throw PlugboardError(
                    .configInvalid, "FileStorage root \(FileStorageText.quote(root)) is not empty and is not a FileStorage root",
                    detail: "It holds \(foreign.count) entries, among them \(FileStorageText.quote(String(decoding: first, as: UTF8.self))), and no \(Self.markerName) marker.",
                    hint: "Point \"root\" of plugin \"\(plugin)\" at a new or empty folder; FileStorage creates it and keeps only its own files there.")
            }
            guard writing else { return }
            // Written whole under a temporary name, then renamed: a concurrent start sees
            // the marker complete or not at all.
            var generator = SystemRandomNumberGenerator()
            let temporary = "\(Self.markerName).\(getpid())-\(String(generator.next() as UInt64, radix: 16))\(TemporaryFile.suffix)"
            let fd = try FileSystem.open(temporary, in: rootFolder, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do throws(FileSystemError) {
                // Closed once, on every path: a second close would close whatever
                // descriptor took the number in between, another thread's.
                defer { close(fd) }
                try FileSystem.writeAll(fd, Array(Self.markerContent.utf8), path: rootFolder.path(of: temporary))
                if sync { try FileSystem.sync(fd, path: rootFolder.path(of: temporary)) }
            } catch {
                unlinkat(rootFolder.fd, temporary, 0)
                throw error
            }
            do throws(FileSystemError) {
                try FileSystem.rename(temporary, in: rootFolder, to: Self.markerName, in: rootFolder)
            } catch {
                unlinkat(rootFolder.fd, temporary, 0)
                throw error
            }
            if sync { try FileSystem.sync(rootFolder) }
        } catch let error as FileSystemError {
            throw error.storageError(action, root: root)
        } catch let error as PlugboardError {
            throw error
        } catch {
            throw PlugboardError(.storageFailed, "\(action): \(error)", underlying: error)
        }
    }

    private func notAFolder(_ path: String, kind: String, isRoot: Bool, plugin: String) -> PlugboardError {
        let what = isRoot ? "FileStorage root \(FileStorageText.quote(path))" : "\(FileStorageText.quote(path)), on the way to FileStorage root \(FileStorageText.quote(root)),"
        return PlugboardError(
            .configInvalid, "\(what) is not a folder",
            detail: "config.root of plugin \"\(plugin)\" needs a folder there; found \(kind).",
            hint: "Point \"root\" at a folder (FileStorage creates a missing one), or move the file out of the way.")
    }
}
