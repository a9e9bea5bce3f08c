#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardConcurrency

/// An object file open for reading, its header checked: the one version of the object it
/// held when opened, whatever renames replace the name afterwards (the descriptor keeps
/// the old file). Closed when the last reference goes.
///
/// `@unchecked Sendable`: every field is immutable; `pread` on the descriptor takes its
/// offset as an argument, so reads from several threads do not disturb one another.
final class ObjectFile: @unchecked Sendable {
    let fd: Int32
    /// Its folder and its name there: the path is made from them only for a message.
    private let folder: Folder
    private let name: String
    let header: ObjectFileHeader
    /// Where the data starts in the file.
    let dataOffset: Int
    private let files: ObjectFiles

    /// The whole data when the open read it with the header (a small file), else nil.
    private let data: [UInt8]?

    init(fd: Int32, name: String, in folder: Folder, header: ObjectFileHeader, dataOffset: Int, files: ObjectFiles,
         data: [UInt8]? = nil) {
        self.fd = fd
        self.folder = folder
        self.name = name
        self.header = header
        self.dataOffset = dataOffset
        self.files = files
        self.data = data
    }

    deinit { close(fd) }

    /// Its path, for messages.
    var path: String { folder.path(of: name) }

    /// `span` of the data as a region of the file for ``ObjectBody/init(_:next:)``, on a
    /// descriptor of its own (the region closes it; this file keeps its own); nil when no
    /// descriptor is left to duplicate, and the body is then read in chunks alone.
    func region(_ span: Range<Int>) -> ObjectFileRegion? {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return nil }
        return try? ObjectFileRegion(descriptor: copy, offset: dataOffset + span.lowerBound, length: span.count)
    }

    /// `count` bytes of the data from `offset` (relative to the data's start); blocking.
    ///
    /// - Throws: `storage.failed` when the file ends first: something other than
    ///   FileStorage cut it after it was opened.
    func read(count: Int, at offset: Int, action: @autoclosure () -> String, cachedOnly: Bool = false) throws(PlugboardError) -> [UInt8] {
        if let data, offset >= 0, count >= 0, offset + count <= data.count {
            return offset == 0 && count == data.count ? data : Array(data[offset..<(offset + count)])
        }
        let bytes: [UInt8]
        do throws(FileSystemError) {
            bytes = try FileSystem.read(fd, count: count, at: dataOffset + offset, path: path, cachedOnly: cachedOnly)
        } catch {
            throw error.storageError(action(), root: files.root)
        }
        guard bytes.count == count else {
            throw files.damaged(path, action(), "The file ended after \(offset + bytes.count) of \(header.size) bytes of data.")
        }
        return bytes
    }
}

/// The body of a ranged or whole `get`: the object file's `span` of data, read with
/// `pread` in chunks of at most ``chunkByteCount`` as the caller asks for them: on the
/// caller's thread when the chunk is in the page cache, else on ``BlockingIO``'s threads.
/// The file is closed when the body ends or is dropped.
final class ObjectFileBody: Sendable {
    /// The most bytes one read returns: large enough that the hop to a blocking thread
    /// costs little per byte, small enough that a slow reader pins little memory.
    static let chunkByteCount = 256 * 1024

    /// The file (nil once the span is done, so that it closes then) and the next offset.
    /// One reader at a time is the contract; the lock makes a second one harmless.
    private let state: LockedValueBox<(file: ObjectFile?, position: Int)>
    private let end: Int
    private let action: String

    init(_ file: ObjectFile, span: Range<Int>, key: String) {
        state = LockedValueBox((file, span.lowerBound))
        end = span.upperBound
        action = ObjectFiles.readAction(key)
    }

    /// The next chunk, or nil at the end of the span.
    func next() async throws -> [UInt8]? {
        let end = self.end
        let claimed = state.withLock { state -> (ObjectFile, Int, Int)? in
            guard let file = state.file, state.position < end else {
                state.file = nil
                return nil
            }
            let count = min(Self.chunkByteCount, end - state.position)
            defer { state.position += count }
            return (file, state.position, count)
        }
        guard let (file, position, count) = claimed else { return nil }
        try Task.checkCancellation()
        let action = self.action
        return try await BlockingIO.runCachedFirst { cachedOnly throws(PlugboardError) -> [UInt8] in
            try file.read(count: count, at: position, action: action, cachedOnly: cachedOnly)
        }
    }
}
