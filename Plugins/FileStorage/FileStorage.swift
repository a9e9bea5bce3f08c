import PlugboardAPI
import PlugboardCrypto

/// An ``ObjectStorage`` that keeps each object as one file under a root folder.
///
/// - **Atomic writes.** An object file holds a small header (key, size, ETag, content
///   type, metadata, lastModified) followed by the data. `put` writes it whole to
///   `<root>/tmp`, flushes it, renames it over the object's file and flushes the folder,
///   so a reader sees the old object or the new one whole, also after `kill -9` or a power
///   loss; data and metadata can never disagree.
/// - **Every valid key, nothing outside the root.** File names are the key's bytes in hex
///   (``ObjectPath``), cut into folders of 125 bytes: `a` beside `a/b`, `..`, 1024 bytes
///   without `/` all work, and no key can name a path outside `<root>/objects`; no
///   symbolic link below the root is followed either (``Folder``).
/// - **Listing without an index.** Hex names sort like the keys' bytes, so a listing
///   reads the folders in name order; nothing has to be kept in step, and several
///   processes may share a root.
///
/// Managed: `start` creates and checks the root (see ``ObjectFiles/prepare(plugin:)``);
/// `stop` has nothing to release. Every method runs its file-system work through
/// ``BlockingIO``, off Swift's cooperative pool.
final class FileStorage: ObjectStorage, ManagedService {
    /// How it was set up.
    let configuration: Configuration
    private let files: ObjectFiles
    private let plugin: String
    private let logger: Logger
    private let checkOnly: Bool

    /// A storage over `configuration.root`; nothing touches the disk before ``start()``.
    ///
    /// - Parameters:
    ///   - plugin: The plugin's name in the manifest, for messages.
    ///   - logger: Where it reports start, stop and damaged files.
    ///   - checkOnly: Loaded by `plugboard check` (``PluginRegistrar/checkOnly``): ``start()``
    ///     checks the root and creates nothing.
    init(configuration: Configuration, plugin: String = "FileStorage", logger: Logger = .disabled, checkOnly: Bool = false) {
        self.configuration = configuration
        self.files = ObjectFiles(root: configuration.root, sync: configuration.fsync)
        self.plugin = plugin
        self.logger = logger.with("root", .string(configuration.root))
        self.checkOnly = checkOnly
    }

    // MARK: - ManagedService

    /// Creates and checks the root folder and removes dead writers' temporary files; in a
    /// check, only checks that it could.
    func start() async throws {
        let files = self.files, plugin = self.plugin, checkOnly = self.checkOnly
        let preparation = try await BlockingIO.run { () throws(PlugboardError) in
            try files.prepare(plugin: plugin, checkOnly: checkOnly)
        }
        if checkOnly {
            logger.info("file storage checked", metadata: ["rootMissing": .string("\(preparation.createdRoot)")])
            return
        }
        logger.info("file storage ready", metadata: [
            "createdRoot": .string("\(preparation.createdRoot)"),
            "removedTemporaryFiles": .string("\(preparation.removedTemporaryFiles)"),
            "fsync": .string("\(configuration.fsync)")])
    }

    /// Closes the root folder held between operations (a request still running keeps its
    /// own reference until it ends).
    func stop() async {
        files.held.reset()
        logger.debug("file storage stopped")
    }

    // MARK: - ObjectStorage

    /// Stores `data` under `key` atomically, replacing any object there.
    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let contentType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        try Task.checkCancellation()
        let files = self.files
        return try await BlockingIO.run { () throws(PlugboardError) -> ObjectInfo in
            let header = ObjectFileHeader(
                key: key, size: data.count, etag: try Self.etag(of: data, key: key), contentType: contentType,
                lastModified: Timestamp.now(), metadata: metadata)
            try files.write(header, data: data)
            return header.info
        }
    }

    /// Streams `body` into a temporary file, `pendingByteCount` at a time, and moves it
    /// into place when `condition` holds (``ObjectFiles/place(_:key:condition:)``):
    /// `.absent` is atomic across processes (a hard link, refused when the name exists),
    /// `.matches` within this process (the key's lock, ``KeyLocks``). A body that throws,
    /// is cancelled, or is longer or shorter than its length leaves only the temporary
    /// file, which is removed.
    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        let contentType = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        try Task.checkCancellation()
        let files = self.files
        let upload = try await BlockingIO.run { () throws(PlugboardError) -> ObjectUpload in
            let upload = try ObjectUpload(files: files, key: key)
            try upload.begin(contentType: contentType, metadata: metadata)
            return upload
        }
        do {
            // Chunks are gathered up to pendingByteCount before each blocking write, so
            // that a body of small chunks does not cost a thread hop per chunk.
            var pending: [UInt8] = []
            try await body.forEachChunk(upTo: Self.maxObjectByteCount) { chunk in
                pending += chunk
                if pending.count >= Self.pendingByteCount {
                    let bytes = pending
                    pending = []
                    try await BlockingIO.run { () throws(PlugboardError) in try upload.write(bytes) }
                }
            }
            let rest = pending
            return try await BlockingIO.run { () throws(PlugboardError) -> ObjectInfo in
                if !rest.isEmpty { try upload.write(rest) }
                let info = try upload.finish(contentType: contentType, metadata: metadata)
                try upload.commit(condition: condition)
                return info
            }
        } catch {
            await BlockingIO.discard(upload)
            throw error
        }
    }

    /// Returns the object under `key`, or the part `range` selects: a body of more than one
    /// chunk is also the file's region (``ObjectBody/fileRegion``), which the server sends
    /// with `sendfile`, and is otherwise read from the file in chunks of
    /// ``ObjectFileBody/chunkByteCount`` as the body is read (never the whole file at once). The open file keeps the version it found: a `put` that replaces the
    /// object meanwhile does not change what the body yields.
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        try range?.validate()
        try Task.checkCancellation()
        let files = self.files
        // The open and, for a body of one chunk, its read are one job: a small cached
        // object costs no thread hop, a cold one a single hop to a blocking thread.
        let (file, span, bytes) = try await BlockingIO.runCachedFirst { cachedOnly throws(PlugboardError) in
            try Self.open(key, range: range, in: files, cachedOnly: cachedOnly)
        }
        let info = file.header.info
        let offsets = range == nil ? nil : span
        if let bytes { return ObjectStream(info: info, range: offsets, body: ObjectBody(bytes)) }
        let reader = ObjectFileBody(file, span: span, key: key)
        // The server sends the region with sendfile; a layer or client that iterates the
        // body reads through `reader`, which never waits for the disk on its caller's thread.
        guard let region = file.region(span) else {
            return ObjectStream(info: info, range: offsets, body: ObjectBody(length: span.count) { try await reader.next() })
        }
        return ObjectStream(info: info, range: offsets, body: ObjectBody(region) { try await reader.next() })
    }

    /// A cached object of up to one chunk (``ObjectFileBody/chunkByteCount``), read on the
    /// caller's thread; `nil` for anything the kernel's cache does not hold (nothing here
    /// waits for the disk) and for larger objects, which stream.
    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try ObjectKey.validate(key)
        try range?.validate()
        let files = self.files
        guard let (file, span, bytes) = try BlockingIO.runCachedOnly({ () throws(PlugboardError) in
            try Self.open(key, range: range, in: files, cachedOnly: true)
        }), let bytes else { return nil }
        return ReadyObject(info: file.header.info, range: range == nil ? nil : span, bytes: bytes)
    }

    /// Opens the object's file and resolves `range` against its size; reads the bytes too
    /// when they fit in one chunk (nil when they stream).
    private static func open(_ key: String, range: ByteRange?, in files: ObjectFiles,
                             cachedOnly: Bool) throws(PlugboardError) -> (ObjectFile, Range<Int>, [UInt8]?) {
        guard let file = try files.open(key, cachedOnly: cachedOnly) else { throw PlugboardError.objectNotFound(key: key) }
        let size = file.header.size
        var span = 0..<size
        if let range {
            guard let offsets = range.resolve(size: size) else {
                throw PlugboardError.rangeNotSatisfiable(key: key, range: range, size: size)
            }
            span = offsets
        }
        guard span.count <= ObjectFileBody.chunkByteCount else { return (file, span, nil) }
        return (file, span, try file.read(count: span.count, at: span.lowerBound,
                                          action: ObjectFiles.readAction(key), cachedOnly: cachedOnly))
    }

    /// Returns the object under `key`, header and data read from one file.
    func get(_ key: String) async throws -> StoredObject {
        try ObjectKey.validate(key)
        try Task.checkCancellation()
        let files = self.files
        return try await BlockingIO.runCachedFirst { cachedOnly throws(PlugboardError) -> StoredObject in
            guard let object = try files.read(key, includeData: true, cachedOnly: cachedOnly) else {
                throw PlugboardError.objectNotFound(key: key)
            }
            return StoredObject(info: object.header.info, data: object.data)
        }
    }

    /// Returns the information of the object under `key`, from its file's header.
    func head(_ key: String) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        try Task.checkCancellation()
        let files = self.files
        return try await BlockingIO.runCachedFirst { cachedOnly throws(PlugboardError) -> ObjectInfo in
            guard let object = try files.read(key, includeData: false, cachedOnly: cachedOnly) else {
                throw PlugboardError.objectNotFound(key: key)
            }
            return object.header.info
        }
    }

    /// Removes the object under `key`; succeeds when there is none.
    func delete(_ key: String) async throws {
        try ObjectKey.validate(key)
        try Task.checkCancellation()
        let files = self.files
        try await BlockingIO.run { () throws(PlugboardError) in try files.remove(key) }
    }

    /// Returns one page of the keys starting with `prefix`, in UTF-8 byte order, with
    /// ``ListingRequest``'s continuation tokens.
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        let request = try ListingRequest(prefix: prefix, limit: limit, continuationToken: continuationToken)
        try Task.checkCancellation()
        let files = self.files, logger = self.logger
        return try await BlockingIO.run { () throws(PlugboardError) -> ObjectListing in
            try files.list(request) { error in
                logger.error("object file left out of a listing", metadata: [
                    "code": .string(error.code.rawValue), "error": .string(error.message)])
            }
        }
    }

    /// The largest object a streamed `put` takes: 5 GiB, S3's single-PUT limit, so that
    /// objects move between backends; the disk is the only other bound.
    static let maxObjectByteCount = ObjectBody.wholeObjectLimit
    /// How many body bytes a streamed `put` gathers before each write: 256 KiB.
    static let pendingByteCount = 256 * 1024

    /// The lowercase hex MD5 of `data`.
    private static func etag(of data: [UInt8], key: String) throws(PlugboardError) -> String {
        do throws(CryptoError) {
            var hasher = try MD5Hasher()
            data.withUnsafeBytes { hasher.update($0) }
            return Hex.encode(try hasher.finalize())
        } catch {
            throw PlugboardError(
                .storageFailed, "could not compute the ETag of object \(FileStorageText.quote(key)): \(error.message)",
                detail: error.detail, hint: error.hint, underlying: error)
        }
    }
}
