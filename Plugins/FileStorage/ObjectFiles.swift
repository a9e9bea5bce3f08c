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
    var temporaryFolder: String { root + "/tmp" }
    var markerPath: String { root + "/" + Self.markerName }

    /// The absolute path of an object's file.
    func path(of object: ObjectPath) -> String {
        objectsFolder + "/" + object.relativePath
    }

    // MARK: - Reading

    /// Reads the object under `key`: its header, and its data when `includeData` is true.
    ///
    /// - Returns: nil when no object is stored under the key.
    /// - Throws: `storage.failed` (or `storage.access_denied`) when the file cannot be read
    ///   or is not an object file of this format.
    func read(_ key: String, includeData: Bool) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        let path = path(of: ObjectPath(key: key))
        return try read(atPath: path, expectedKey: key, includeData: includeData,
                        action: "could not read object \(FileStorageText.quote(key))")
    }

    /// Reads the object file at `path`; nil when there is none.
    func read(atPath path: String, expectedKey: String?, includeData: Bool,
              action: String) throws(PlugboardError) -> (header: ObjectFileHeader, data: [UInt8])? {
        let fd: Int32
        do throws(FileSystemError) {
            fd = try FileSystem.open(path, O_RDONLY | O_NOFOLLOW)
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
        let target = path(of: object)
        let temporary: TemporaryFile
        do throws(FileSystemError) {
            temporary = try TemporaryFile.create(in: temporaryFolder)
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
            try place(temporary.path, at: target, folders: object.folders)
            placed = true
            if sync {
                do throws(FileSystemError) {
                    try FileSystem.syncFolder(FileSystem.parent(target))
                } catch where error.code == ENOENT {
                    // A concurrent delete of this key removed the file and its folder.
                }
            }
        } catch {
            throw error.storageError(action, root: root)
        }
    }

    /// Renames `source` to `target`, creating the folders on the way; retries when a
    /// concurrent delete removed a folder between creating it and the rename.
    private func place(_ source: String, at target: String, folders: [String]) throws(FileSystemError) {
        var attempt = 0
        while true {
            do throws(FileSystemError) {
                try FileSystem.rename(source, to: target)
                return
            } catch where error.code == ENOENT && !folders.isEmpty && attempt < Self.placementAttempts {
                attempt += 1
                do throws(FileSystemError) {
                    try makeFolders(folders)
                } catch where error.code == ENOENT {
                    // A concurrent delete removed a folder above the one being made: again.
                }
            }
        }
    }

    /// Creates `objects/f1`, `objects/f1/f2`, ... as needed (mode 0700).
    private func makeFolders(_ folders: [String]) throws(FileSystemError) {
        var path = objectsFolder
        for folder in folders {
            let parent = path
            path += "/" + folder
            if try FileSystem.makeFolder(path, mode: 0o700), sync {
                try FileSystem.syncFolder(parent)
            }
        }
    }

    // MARK: - Deleting

    /// Removes the key's file if there is one, then the folders it leaves empty.
    func remove(_ key: String) throws(PlugboardError) {
        let object = ObjectPath(key: key)
        let target = path(of: object)
        do throws(FileSystemError) {
            let existed = try FileSystem.remove(target)
            if existed && sync {
                do throws(FileSystemError) {
                    try FileSystem.syncFolder(FileSystem.parent(target))
                } catch where error.code == ENOENT {
                    // A concurrent delete removed the emptied folder: nothing left to flush.
                }
            }
        } catch {
            throw error.storageError("could not delete object \(FileStorageText.quote(key))", root: root)
        }
        var folder = FileSystem.parent(target)
        for _ in object.folders {
            guard FileSystem.removeFolderIfEmpty(folder) else { break }
            folder = FileSystem.parent(folder)
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
