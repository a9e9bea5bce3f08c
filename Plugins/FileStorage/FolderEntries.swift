#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The entries of one objects folder as fixed-size records in one C buffer, read with
/// `readdir`, filtered and sorted with `memcmp` and `qsort`.
///
/// A listing reads a whole folder for every page, so this is its hot loop: with keys up
/// to 125 bytes, 10,000 objects are 10,000 names in `objects/`. Records and C calls keep
/// the cost per name small also in a debug build, where Swift's generic collection code
/// is not specialized (docs/BENCHMARKS.md, "FileStorage listing", has what an
/// array-based version cost there).
///
/// Each record is ``recordSize`` bytes: the name's digits (after the `_` of a file),
/// zero-padded to 250 bytes, then a kind byte (0 file, 1 folder), then the digit count.
/// `memcmp` of the first 251 bytes therefore orders records as their keys: digits in byte
/// order (a shorter prefix first, as zero sorts before every digit), and a file before a
/// folder of the same digits (whose keys are all longer).
final class FolderEntries {
    static let recordSize = 256
    private static let digitsSize = ObjectPath.folderDigits
    private static let kindOffset = digitsSize
    private static let lengthOffset = digitsSize + 2

    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    /// The number of records.
    private(set) var count = 0

    deinit { free(buffer) }

    /// Whether record `index` is a file.
    func isFile(_ index: Int) -> Bool { record(index).load(fromByteOffset: Self.kindOffset, as: UInt8.self) == 0 }

    /// The digits of record `index` (a file's without its `_`).
    func digits(_ index: Int) -> [UInt8] {
        let length = Int(record(index).loadUnaligned(fromByteOffset: Self.lengthOffset, as: UInt16.self))
        return Array(UnsafeRawBufferPointer(start: record(index), count: length))
    }

    /// The file or folder name of record `index`.
    func name(_ index: Int) -> String {
        let digits = String(decoding: digits(index), as: UTF8.self)
        return isFile(index) ? "_" + digits : digits
    }

    /// Reads `folder` and keeps the names that stand for a file or folder (see
    /// ``ObjectPath``) and may hold keys that start with `prefix` and come after `after`;
    /// both are digits relative to the folder (what remains after the folder's own digits).
    static func read(_ folder: Folder, prefix: [UInt8], after: [UInt8]?) throws(FileSystemError) -> FolderEntries {
        let entries = FolderEntries()
        let dir = try FileSystem.entries(of: folder)
        defer { closedir(dir) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        var failure: FileSystemError?
        prefix.withUnsafeBytes { prefix in
            (after ?? []).withUnsafeBytes { afterBytes in
                while true {
                    errno = 0
                    guard let entry = readdir(dir) else {
                        if errno != 0 { failure = FileSystemError("readdir", folder.path) }
                        return
                    }
                    let name = UnsafeRawPointer(entry) + nameOffset
                    let nameLength = strlen(name.assumingMemoryBound(to: CChar.self))
                    let isFile = name.load(as: UInt8.self) == UInt8(ascii: "_")
                    let digits = isFile ? name + 1 : name
                    let length = isFile ? nameLength - 1 : nameLength
                    if isFile {
                        guard length > 0, length <= digitsSize, length % 2 == 0 else { continue }
                    } else {
                        guard length == digitsSize else { continue }
                    }
                    guard matches(digits, length, isFile: isFile, prefix: prefix),
                          after == nil || follows(digits, length, isFile: isFile, after: afterBytes) else { continue }
                    guard entries.append(digits, length, isFile: isFile) else {
                        failure = FileSystemError("readdir", folder.path, code: ENOMEM)
                        return
                    }
                }
            }
        }
        if let failure { throw failure }
        return entries
    }

    /// Sorts the records in key order.
    func sort() {
        guard let buffer, count > 1 else { return }
        qsort(buffer, count, Self.recordSize) { a, b in
            memcmp(a!, b!, FolderEntries.digitsSize + 1)
        }
    }

    // MARK: - Private

    private func record(_ index: Int) -> UnsafeMutableRawPointer { buffer! + index * Self.recordSize }

    /// Adds a record; false when memory ran out.
    private func append(_ digits: UnsafeRawPointer, _ length: Int, isFile: Bool) -> Bool {
        if count == capacity {
            let grownCapacity = max(64, capacity * 2)
            guard let grown = realloc(buffer, grownCapacity * Self.recordSize) else { return false }
            buffer = grown
            capacity = grownCapacity
        }
        let record = record(count)
        memset(record, 0, Self.recordSize)
        memcpy(record, digits, length)
        record.storeBytes(of: isFile ? 0 : 1, toByteOffset: Self.kindOffset, as: UInt8.self)
        record.storeBytes(of: UInt16(length), toByteOffset: Self.lengthOffset, as: UInt16.self)
        count += 1
        return true
    }

    /// Whether keys starting with the digits can start with `prefix`: a file's digits must
    /// start with it; a folder's must start with it or be the start of it.
    private static func matches(_ digits: UnsafeRawPointer, _ length: Int, isFile: Bool,
                                prefix: UnsafeRawBufferPointer) -> Bool {
        guard let base = prefix.baseAddress, prefix.count > 0 else { return true }
        if isFile && length < prefix.count { return false }
        return memcmp(digits, base, min(length, prefix.count)) == 0
    }

    /// Whether a key with these digits (a file), or some key in this folder, comes after
    /// `after`.
    private static func follows(_ digits: UnsafeRawPointer, _ length: Int, isFile: Bool,
                                after: UnsafeRawBufferPointer) -> Bool {
        guard let base = after.baseAddress, after.count > 0 else { return true }
        let common = min(length, after.count)
        let order = memcmp(digits, base, common)
        if order != 0 { return order > 0 }
        // One is the start of the other. A file comes after `after` only when it is longer;
        // a folder's keys are all longer than its digits, so either way it may hold later keys.
        return isFile ? length > after.count : true
    }
}
