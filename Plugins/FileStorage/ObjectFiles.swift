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

    var objectsFolder: String { root + "/objects" }
    var markerPath: String { root + "/" + Self.markerName }

    /// The absolute path of an object's file, for messages.
    func path(of object: ObjectPath) -> String {
        objectsFolder + "/" + object.relativePath
    }

    /// The root (opened by its path, links on the way to it followed: where the root is,
    /// is the operator's choice), then each folder of `names` below it, without following
    /// a link: the root first, the folder `names` leads to last.
    func openChain(_ names: [String]) throws(FileSystemError) -> [Folder] {
        var chain = [try FileSystem.openFolder(atPath: root)]
        for name in names { chain.append(try FileSystem.openFolder(name, in: chain[chain.count - 1])) }
        return chain
    }

    /// The folder `names` leads to below the root, opened as ``openChain(_:)`` does.
    func open(_ names: [String]) throws(FileSystemError) -> Folder {
        var folder = try FileSystem.openFolder(atPath: root)
        for name in names { folder = try FileSystem.openFolder(name, in: folder) }
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
    func read(_ key: String, includeData: Bool) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        let object = ObjectPath(key: key)
        let action = "could not read object \(FileStorageText.quote(key))"
        let folder: Folder
        do throws(FileSystemError) {
            folder = try open(folderNames(of: object))
        } catch {
            // A folder on the way is missing (or a file): no object under the key.
            if error.code == ENOENT || error.code == ENOTDIR { return nil }
            throw error.storageError(action, root: root)
        }
        return try read(object.fileName, in: folder, expectedKey: key, includeData: includeData, action: action)
    }

    /// Reads the object file `name` of `folder`; nil when there is none.
    func read(_ name: String, in folder: Folder, expectedKey: String?, includeData: Bool,
              action: String) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        let path = folder.path(of: name)
        let fd: Int32
        do throws(FileSystemError) {
            fd = try FileSystem.open(name, in: folder, O_RDONLY)
        } catch {
            if error.code == ENOENT || error.code == ENOTDIR { return nil }
            if error.code == ELOOP { throw damaged(path, action, "It is a symbolic link; FileStorage only writes regular files.") }
            throw error.storageError(action, root: root)
        }
        defer { close(fd) }
        do {
            let st = try FileSystem.status(fd, path: path)
            guard FileSystem.isRegularFile(st.st_mode) else {
                throw damaged(path, action, "It is \(FileSystem.kind(st.st_mode)), not a regular file.")
            }
            let fileSize = Int(st.st_size)
            let prefix = try FileSystem.read(fd, count: ObjectFileHeader.prefixByteCount, at: 0, path: path)
            guard let bodyLength = ObjectFileHeader.bodyLength(fromPrefix: prefix) else {
                throw damaged(path, action, "It does not start with an object header of format 1 (\(fileSize) bytes).")
            }
            let body = try FileSystem.read(fd, count: bodyLength, at: ObjectFileHeader.prefixByteCount, path: path)
            guard body.count == bodyLength, let header = ObjectFileHeader.decode(body: body) else {
                throw damaged(path, action, "Its object header is not valid.")
            }
            if let expectedKey, !ObjectKey.isSame(header.key, as: expectedKey) {
                throw damaged(path, action, "It holds the object of another key (\(header.key.utf8.count) bytes).")
            }
            let dataOffset = ObjectFileHeader.prefixByteCount + bodyLength
            guard fileSize == dataOffset + header.size else {
                throw damaged(path, action, "The header announces \(header.size) bytes of data, the file holds \(fileSize - dataOffset).")
            }
            guard includeData else { return (header, []) }
            let data = try FileSystem.read(fd, count: header.size, at: dataOffset, path: path)
            guard data.count == header.size else {
                throw damaged(path, action, "The file ended after \(data.count) of \(header.size) bytes of data.")
            }
            return (header, data)
        } catch let error as FileSystemError {
            throw error.storageError(action, root: root)
        } catch let error as PlugboardError {
            throw error
        } catch {
            throw PlugboardError(.storageFailed, "\(action): \(error)", underlying: error)
        }
    }

    // MARK: - Writing

    /// Writes the object whole to a temporary file, then renames it over the key's file.
    func write(_ header: ObjectFileHeader, data: [UInt8]) throws(PlugboardError) {
        let action = "could not write object \(FileStorageText.quote(header.key))"
        let object = ObjectPath(key: header.key)
        let temporary: TemporaryFile
        do throws(FileSystemError) {
            temporary = try TemporaryFile.create(in: open(["tmp"]))
        } catch {
            throw error.storageError(action, root: root)
        }
        var placed = false
        defer {
            if placed { close(temporary.fd) } else { temporary.discard() }
        }
        do throws(FileSystemError) {
            try FileSystem.writeAll(temporary.fd, header.encoded(), path: temporary.path)
            try FileSystem.writeAll(temporary.fd, data, path: temporary.path)
            if sync { try FileSystem.sync(temporary.fd, path: temporary.path) }
            let folder = try place(temporary, at: object)
            placed = true
            // A concurrent delete of this key may have removed the folder since: flushing
            // it through its descriptor still works, and there is nothing left to keep.
            if sync { try FileSystem.sync(folder) }
        } catch {
            throw error.storageError(action, root: root)
        }
    }

    /// Renames `temporary` to the object's file, creating the folders on the way; retries
    /// when a concurrent delete removed a folder between creating it and the rename.
    /// Returns the folder it is in.
    private func place(_ temporary: TemporaryFile, at object: ObjectPath) throws(FileSystemError) -> Folder {
        var attempt = 0
        while true {
            do throws(FileSystemError) {
                let folder = try open(folderNames(of: object))
                try FileSystem.rename(temporary.name, in: temporary.folder, to: object.fileName, in: folder)
                return folder
            } catch where error.code == ENOENT && !object.folders.isEmpty && attempt < Self.placementAttempts {
                attempt += 1
                do throws(FileSystemError) {
                    try makeFolders(object.folders)
                } catch where error.code == ENOENT {
                    // A concurrent delete removed a folder above the one being made: again.
                }
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
            let existed = try FileSystem.remove(object.fileName, in: chain[chain.count - 1])
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

    private func damaged(_ path: String, _ action: String, _ detail: String) -> PlugboardError {
        PlugboardError(
            .storageFailed, "\(action): object file \(FileStorageText.quote(path)) is damaged",
            detail: detail,
            hint: "Something other than FileStorage changed files under its root \(FileStorageText.quote(root)); restore the file from a backup or delete the object.")
    }
}
