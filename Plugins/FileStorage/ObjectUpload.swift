#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardCrypto

/// One object being written: its temporary file in `<root>/tmp`, filled as the body's
/// chunks arrive and hashed on the way, then flushed and moved into place whole by
/// ``commit(condition:)``, or removed by ``discard()``.
///
/// The header goes first with the ETag and size still unknown: both are fixed-width
/// fields (``ObjectFileHeader``), so the real header, written over it at offset 0 once
/// the body has ended, has exactly the same length, and the data never moves. Until the
/// rename nothing but the temporary file exists, so a writer killed at any moment leaves
/// the previous object as it was (and a temporary file that start removes).
///
/// Blocking: call it from ``BlockingIO``. `@unchecked Sendable`: one `put` owns it and
/// calls it from one task, one blocking job at a time, so no two threads touch it at once.
final class ObjectUpload: @unchecked Sendable {
    let key: String
    private let files: ObjectFiles
    private let temporary: TemporaryFile
    private let action: String
    private var hasher: MD5Hasher?
    private var open = true
    /// Data bytes written so far (what follows the header).
    private(set) var dataByteCount = 0
    private var headerByteCount = 0

    /// Creates the temporary file.
    init(files: ObjectFiles, key: String) throws(PlugboardError) {
        self.key = key
        self.files = files
        self.action = "could not write object \(FileStorageText.quote(key))"
        do throws(FileSystemError) {
            temporary = try TemporaryFile.create(in: files.open(["tmp"]))
        } catch {
            throw error.storageError(action, root: files.root)
        }
    }

    deinit { discard() }

    /// Writes the placeholder header of a streamed object, ETag and size to come, and
    /// starts hashing what follows it.
    func begin(contentType: String, metadata: [String: String]) throws(PlugboardError) {
        let placeholder = ObjectFileHeader(key: key, size: 0, etag: String(repeating: "0", count: 32), contentType: contentType,
                                           lastModified: Timestamp(secondsSince1970: 0), metadata: metadata).encoded()
        headerByteCount = placeholder.count
        try write(placeholder)
        do throws(CryptoError) {
            hasher = try MD5Hasher()
        } catch {
            throw PlugboardError(
                .storageFailed, "could not compute the ETag of object \(FileStorageText.quote(key)): \(error.message)",
                detail: error.detail, hint: error.hint, underlying: error)
        }
    }

    /// Appends `bytes` at the end of the file (hashed when the upload was begun).
    func write(_ bytes: [UInt8]) throws(PlugboardError) {
        do throws(FileSystemError) {
            try FileSystem.writeAll(temporary.fd, bytes, path: temporary.path)
        } catch {
            throw error.storageError(action, root: files.root)
        }
        if hasher != nil {
            bytes.withUnsafeBytes { hasher!.update($0) }
            dataByteCount += bytes.count
        }
    }

    /// Writes the streamed object's real header over the placeholder: the data's size
    /// and MD5, `lastModified` now. Returns the object's information.
    func finish(contentType: String, metadata: [String: String]) throws(PlugboardError) -> ObjectInfo {
        let digest: [UInt8]
        do throws(CryptoError) {
            guard let hasher = hasher.take() else {
                throw CryptoError("the upload's MD5 was not started", hint: "Call begin(contentType:metadata:) before finish.")
            }
            digest = try hasher.finalize()
        } catch {
            throw PlugboardError(
                .storageFailed, "could not compute the ETag of object \(FileStorageText.quote(key)): \(error.message)",
                detail: error.detail, hint: error.hint, underlying: error)
        }
        let header = ObjectFileHeader(key: key, size: dataByteCount, etag: Hex.encode(digest), contentType: contentType,
                                      lastModified: Timestamp.now(), metadata: metadata)
        let encoded = header.encoded()
        guard encoded.count == headerByteCount else {
            throw PlugboardError(
                .storageFailed, "\(action): the object header changed length",
                detail: "Expected a header of \(headerByteCount) bytes, as the placeholder written first, found \(encoded.count).",
                hint: "This is a bug in FileStorage; the previous object under the key is unchanged.")
        }
        do throws(FileSystemError) {
            try FileSystem.writeAll(temporary.fd, encoded, at: 0, path: temporary.path)
        } catch {
            throw error.storageError(action, root: files.root)
        }
        return header.info
    }

    /// Flushes the file and moves it into place when `condition` holds
    /// (``ObjectFiles/place(_:key:condition:)``).
    func commit(condition: WriteCondition) throws(PlugboardError) {
        do throws(FileSystemError) {
            if files.sync { try FileSystem.sync(temporary.fd, path: temporary.path) }
        } catch {
            throw error.storageError(action, root: files.root)
        }
        try files.place(temporary, key: key, condition: condition)
        // In place: closing drops the lock; there is no temporary name left to remove
        // (a link's was removed by place).
        open = false
        close(temporary.fd)
    }

    /// Removes the temporary file, unless it was committed; safe to call more than once.
    func discard() {
        guard open else { return }
        open = false
        temporary.discard()
    }
}
