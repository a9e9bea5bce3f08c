#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI

/// The object files under one root, and the blocking operations on them that
/// ``FileStorage`` runs off Swift's cooperative pool.
///
/// ```
/// <root>/.plugboard-filestorage   format marker ("plugboard-filestorage 1")
/// <root>/objects/...              one file per object, named by ObjectPath
/// <root>/tmp/*.tmp                files being written, renamed into objects/ when whole
/// ```
///
/// An object file holds an ``ObjectFileHeader`` followed by the data, so data and
/// metadata change together: a write goes to a temporary file, is flushed (`fsync`),
/// renamed over the object's file in one step, and the folder is flushed. A reader opens
/// one file and reads header and data through the same descriptor, so it sees the old
/// object or the new one whole, even while the rename happens and after `kill -9`.
///
/// Below the root nothing is opened by path: each operation opens the root, then each
/// folder on the way by name without following links (``Folder``), so a symbolic link
/// put in place of `objects/`, `tmp/` or a folder in them makes the operation fail
/// (`ELOOP`) instead of writing wherever the link points.
struct ObjectFiles: Sendable {
    /// The marker file's name, in the root.
    static let markerName = ".plugboard-filestorage"
    /// The marker file's content: this layout, format 1.
    static let markerContent = "plugboard-filestorage 1\n"
    /// Temporary files untouched for longer than this, and not locked, are removed at start.
    static let staleTemporaryFileSeconds = 10
    /// How often a write re-creates its folders when a concurrent delete removed them.
    static let placementAttempts = 100

    /// The root folder, absolute.
    let root: String
    /// Whether writes and deletes are flushed to stable storage (`fsync`).
    let sync: Bool
    /// The root, open between operations.
    let held: HeldRoot

    init(root: String, sync: Bool) {
        self.root = root
        self.sync = sync
        held = HeldRoot(path: root)
    }

    var objectsFolder: String { root + "/objects" }
    var markerPath: String { root + "/" + Self.markerName }

    /// The absolute path of an object's file, for messages.
    func path(of object: ObjectPath) -> String {
        objectsFolder + "/" + object.relativePath
    }

    /// The root (opened by its path, links on the way to it followed: where the root is,
    /// is the operator's choice; held open, see ``HeldRoot``), then each folder of `names`
    /// below it, without following a link: the root first, the folder `names` leads to last.
    func openChain(_ names: [String]) throws(FileSystemError) -> [Folder] {
        var chain = [try held.folder()]
        for name in names { chain.append(try FileSystem.openFolder(name, in: chain[chain.count - 1])) }
        return chain
    }

    /// The folder `names` leads to below the root, opened as ``openChain(_:)`` does.
    func open(_ names: [String], cachedOnly: Bool = false) throws(FileSystemError) -> Folder {
        var folder = try held.folder(cachedOnly: cachedOnly)
        for name in names { folder = try FileSystem.openFolder(name, in: folder, cachedOnly: cachedOnly) }
        return folder
    }

    /// The folder that holds an object's file, below `objects`.
    private func folderNames(of object: ObjectPath) -> [String] { ["objects"] + object.folders }

    // MARK: - Reading

    /// Reads the object under `key`: its header, and its data when `includeData` is true.
    ///
    /// - Returns: nil when no object is stored under the key.
    /// - Throws: `storage.failed` (or `storage.access_denied`) when the file cannot be read
    ///   or is not an object file of this format.
    ///
    /// `cachedOnly`: nothing waits for the disk (see ``FileSystem/cachedReads``); where
    /// something would, the error's `underlying` is ``FileSystemError/wouldBlock(_:)``.
    func read(_ key: String, includeData: Bool, cachedOnly: Bool = false) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        guard let file = try open(key, cachedOnly: cachedOnly) else { return nil }
        guard includeData else { return (file.header, []) }
        return (file.header, try file.read(count: file.header.size, at: 0, action: Self.readAction(key), cachedOnly: cachedOnly))
    }

    /// The start of a failed read's message.
    static func readAction(_ key: String) -> String { "could not read object \(FileStorageText.quote(key))" }

    /// Files up to this size are read whole by ``open(_:in:expectedKey:action:cachedOnly:)``.
    static let wholeReadBytes = 64 << 10

    /// Reads the object file `name` of `folder`; nil when there is none.
    func read(_ name: String, in folder: Folder, expectedKey: String?, includeData: Bool,
              action: String) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        guard let file = try open(name, in: folder, expectedKey: expectedKey, action: action) else { return nil }
        guard includeData else { return (file.header, []) }
        return (file.header, try file.read(count: file.header.size, at: 0, action: action))
    }

    /// Opens the object under `key` and checks its header, for a read of its data in parts.
    ///
    /// - Returns: nil when no object is stored under the key.
    func open(_ key: String, cachedOnly: Bool = false) throws(PlugboardError) -> ObjectFile? {
        let object = ObjectPath(key: key)
        if cachedOnly, let base = try? held.folder(cachedOnly: true) {
            // The GET of a cached object: one openat2 from the held root, where the walk
            // below opens and closes `objects` and each folder on the way (two system calls
            // of about seven for a short key). What that call cannot settle (a link, a
            // permission, the cache) goes the walk's way, whose errors name the part.
            let name = object.path(under: "objects/")
            let fd = FileSystem.openBeneathCached(name, in: base, O_RDONLY)
            if fd >= 0 { return try check(fd, name: name, in: base, expectedKey: key, action: Self.readAction(key), cachedOnly: true) }
            if errno == ENOENT || errno == ENOTDIR { return nil }
        }
        let folder: Folder
        do throws(FileSystemError) {
            folder = try open(folderNames(of: object), cachedOnly: cachedOnly)
        } catch {
            // A folder on the way is missing (or a file): no object under the key.
            if error.code == ENOENT || error.code == ENOTDIR { return nil }
            throw error.storageError(Self.readAction(key), root: root)
        }
        return try open(object.fileName, in: folder, expectedKey: key, action: Self.readAction(key), cachedOnly: cachedOnly)
    }

    /// Opens the object file `name` of `folder` and checks its header against the file's
    /// size; nil when there is none. The descriptor keeps this version of the object
    /// readable whatever renames replace it afterwards.
    ///
    /// `action` (the start of an error's message) is made only for an error: this runs
    /// for every read.
    func open(_ name: String, in folder: Folder, expectedKey: String?, action: @autoclosure () -> String,
              cachedOnly: Bool = false) throws(PlugboardError) -> ObjectFile? {
        // Made only for a message: this runs for every read.
        let fd: Int32
        do throws(FileSystemError) {
            fd = try FileSystem.open(name, in: folder, O_RDONLY, cachedOnly: cachedOnly)
        } catch {
            if error.code == ENOENT || error.code == ENOTDIR { return nil }
            if error.code == ELOOP {
                throw damaged(folder.path(of: name), action(), "It is a symbolic link; FileStorage only writes regular files.")
            }
            throw error.storageError(action(), root: root)
        }
        return try check(fd, name: name, in: folder, expectedKey: expectedKey, action: action(), cachedOnly: cachedOnly)
    }

    /// Checks the header of the object file open on `fd` (`name` in `folder`, for
    /// messages) against the file's size, and takes the descriptor into the ObjectFile;
    /// closes it when it throws.
    private func check(_ fd: Int32, name: String, in folder: Folder, expectedKey: String?, action: @autoclosure () -> String,
                       cachedOnly: Bool) throws(PlugboardError) -> ObjectFile {
        // Made only for a message: this runs for every read.
        var path: String { folder.path(of: name) }
        var owned = true
        defer { if owned { close(fd) } }
        do {
            let st = try FileSystem.status(fd, path: path)
            guard FileSystem.isRegularFile(st.st_mode) else {
                throw damaged(path, action(), "It is \(FileSystem.kind(st.st_mode)), not a regular file.")
            }
            let fileSize = Int(st.st_size)
            // A small file is read whole at once: header and data in one read, not three.
            let first = try FileSystem.read(fd, count: fileSize <= Self.wholeReadBytes ? fileSize : ObjectFileHeader.prefixByteCount,
                                            at: 0, path: path, cachedOnly: cachedOnly)
            guard let bodyLength = ObjectFileHeader.bodyLength(fromPrefix: first.prefix(ObjectFileHeader.prefixByteCount)) else {
                throw damaged(path, action(), "It does not start with an object header of format 1 (\(fileSize) bytes).")
            }
            let dataOffset = ObjectFileHeader.prefixByteCount + bodyLength
            let body = first.count >= dataOffset ? first[ObjectFileHeader.prefixByteCount..<dataOffset]
                : try FileSystem.read(fd, count: bodyLength, at: ObjectFileHeader.prefixByteCount, path: path, cachedOnly: cachedOnly)[...]
            guard body.count == bodyLength, let header = ObjectFileHeader.decode(body: body) else {
                throw damaged(path, action(), "Its object header is not valid.")
            }
            if let expectedKey, !ObjectKey.isSame(header.key, as: expectedKey) {
                throw damaged(path, action(), "It holds the object of another key (\(header.key.utf8.count) bytes).")
            }
            guard fileSize == dataOffset + header.size else {
                throw damaged(path, action(), "The header announces \(header.size) bytes of data, the file holds \(fileSize - dataOffset).")
            }
            owned = false
            let data = first.count == fileSize && first.count >= dataOffset ? Array(first[dataOffset...]) : nil
            return ObjectFile(fd: fd, name: name, in: folder, header: header, dataOffset: dataOffset, files: self, data: data)
        } catch let error as FileSystemError {
            throw error.storageError(action(), root: root)
        } catch let error as PlugboardError {
            throw error
        } catch {
            throw PlugboardError(.storageFailed, "\(action()): \(error)", underlying: error)
        }
    }

    // MARK: - Writing

    /// Writes the object whole to a temporary file, then renames it over the key's file.
    func write(_ header: ObjectFileHeader, data: [UInt8]) throws(PlugboardError) {
        let upload = try ObjectUpload(files: self, key: header.key)
        defer { upload.discard() }
        try upload.write(header.encoded())
        try upload.write(data)
        try upload.commit(condition: .none)
    }

    /// Moves the whole, flushed temporary file of `key` into place when `condition` holds:
    /// renamed over the key's file for `.none` and `.matches`, linked to its name for
    /// `.absent` (which `link` refuses with `EEXIST` when a file has it: atomic across
    /// processes too). The key's in-process lock is held from the check to the rename, and
    /// every write and delete of the key takes it, so `.matches` is atomic against every
    /// other writer of this process; another process writing the same root could slip a
    /// write between its check and its rename. Flushes the folder after.
    func place(_ temporary: TemporaryFile, key: String, condition: WriteCondition) throws(PlugboardError) {
        let object = ObjectPath(key: key)
        let action = "could not write object \(FileStorageText.quote(key))"
        switch condition {
        case .none, .absent, .matches:
            break
        @unknown default:
            throw PlugboardError.conditionUnsupported(
                key: key, condition: condition, backend: "FileStorage",
                hint: "Rebuild FileStorage against the PlugboardAPI that defines the condition, or write without it.")
        }
        let folder = try KeyLocks.withLock(key) { () throws(PlugboardError) -> Folder in
            try place(temporary, at: object, key: key, condition: condition, action: action)
        }
        // A concurrent delete of this key may have removed the folder since: flushing it
        // through its descriptor still works, and there is nothing left to keep.
        do throws(FileSystemError) {
            if sync { try FileSystem.sync(folder) }
        } catch {
            throw error.storageError(action, root: root)
        }
    }

    /// The check and the rename (or link) of ``place(_:key:condition:)``, the key's lock
    /// held; creates the folders on the way, and retries when a concurrent delete removed a
    /// folder between creating it and the rename. Returns the folder it is in.
    private func place(_ temporary: TemporaryFile, at object: ObjectPath, key: String, condition: WriteCondition,
                       action: String) throws(PlugboardError) -> Folder {
        var attempt = 0
        while true {
            let folder: Folder
            do throws(FileSystemError) {
                folder = try open(folderNames(of: object))
            } catch where error.code == ENOENT || error.code == ENOTDIR {
                if case .matches = condition {
                    // A folder on the way is missing: no object under the key.
                    throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: false)
                }
                guard error.code == ENOENT, !object.folders.isEmpty, attempt < Self.placementAttempts else {
                    throw error.storageError(action, root: root)
                }
                attempt += 1
                do throws(FileSystemError) {
                    try makeFolders(object.folders)
                } catch where error.code == ENOENT {
                    // A concurrent delete removed a folder above the one being made: again.
                } catch {
                    throw error.storageError(action, root: root)
                }
                continue
            } catch {
                throw error.storageError(action, root: root)
            }
            if case .matches(let etag) = condition {
                let current = try open(object.fileName, in: folder, expectedKey: key, action: action)
                guard let current, current.header.etag == etag else {
                    throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: current != nil,
                                                            currentETag: current?.header.etag)
                }
            }
            do throws(FileSystemError) {
                if condition == .absent {
                    try FileSystem.link(temporary.name, in: temporary.folder, to: object.fileName, in: folder)
                    // The object is in place under its name; the temporary name goes.
                    _ = try? FileSystem.remove(temporary.name, in: temporary.folder)
                } else {
                    try FileSystem.rename(temporary.name, in: temporary.folder, to: object.fileName, in: folder)
                }
                return folder
            } catch where error.code == EEXIST && condition == .absent {
                throw PlugboardError.preconditionFailed(key: key, condition: condition, exists: true)
            } catch where error.code == ENOENT && !object.folders.isEmpty && attempt < Self.placementAttempts {
                // A concurrent delete removed the folder after it was opened: again.
                attempt += 1
            } catch {
                throw error.storageError(action, root: root)
            }
        }
    }

    /// Creates `objects/f1`, `objects/f1/f2`, ... as needed (mode 0700).
    private func makeFolders(_ folders: [String]) throws(FileSystemError) {
        var folder = try open(["objects"])
        for name in folders {
            if try FileSystem.makeFolder(name, in: folder, mode: 0o700), sync {
                try FileSystem.sync(folder)
            }
            folder = try FileSystem.openFolder(name, in: folder)
        }
    }

    // MARK: - Deleting

    /// Removes the key's file if there is one, then the folders it leaves empty.
    func remove(_ key: String) throws(PlugboardError) {
        let object = ObjectPath(key: key)
        let action = "could not delete object \(FileStorageText.quote(key))"
        // root, objects, then each folder of the key: the folders are removed through
        // the one that holds them.
        let chain: [Folder]
        do throws(FileSystemError) {
            chain = try openChain(folderNames(of: object))
            // Under the key's lock, so that a conditional write's check and rename see no
            // delete between them (``place(_:key:condition:)``).
            let existed = try KeyLocks.withLock(key) { () throws(FileSystemError) in
                try FileSystem.remove(object.fileName, in: chain[chain.count - 1])
            }
            if existed && sync { try FileSystem.sync(chain[chain.count - 1]) }
        } catch where error.code == ENOENT || error.code == ENOTDIR {
            return  // a folder on the way is gone: no object under the key
        } catch {
            throw error.storageError(action, root: root)
        }
        for (index, name) in object.folders.enumerated().reversed() {
            guard FileSystem.removeFolderIfEmpty(name, in: chain[index + 1]) else { break }
        }
    }

    // MARK: - Errors

    func damaged(_ path: String, _ action: String, _ detail: String) -> PlugboardError {
        PlugboardError(
            .storageFailed, "\(action): object file \(FileStorageText.quote(path)) is damaged",
            detail: detail,
            hint: "Something other than FileStorage changed files under its root \(FileStorageText.quote(root)); restore the file from a backup or delete the object.")
    }
}
