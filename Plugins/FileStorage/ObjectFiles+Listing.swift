#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI

extension ObjectFiles {
    /// One page of a listing, straight from the folders: no index to keep in step.
    ///
    /// Names in an objects folder are hex digits, whose order is the keys' byte order (see
    /// ``ObjectPath``). The walk reads one folder, keeps the names that can hold a key with
    /// the prefix and after the continuation point, sorts them (a file before a folder of
    /// the same digits, whose keys are all longer), and goes down into folders in that
    /// order until the page is full and one more key is known to follow. It reads the
    /// header of each file it takes through the folder it is in, which it holds open; a
    /// folder below `objects` that is a symbolic link was not made by FileStorage and is
    /// skipped, not followed.
    ///
    /// Cost: every folder on the way is read whole (``FolderEntries``). Keys up to 125 bytes
    /// are files directly in `objects/`, so a page costs one read of that folder plus one
    /// header read per object returned.
    ///
    /// - Parameter onDamaged: Told about object files that cannot be read; they are left
    ///   out of the page.
    func list(_ request: ListingRequest, onDamaged: (PlugboardError) -> Void) throws(PlugboardError) -> ObjectListing {
        var walk = Walk(prefix: ObjectPath(key: request.prefix).digits,
                        after: request.startAfter.map { ObjectPath(key: $0).digits },
                        limit: request.limit)
        var objects: [ObjectInfo] = []
        do throws(FileSystemError) {
            try walk.run(open(["objects"])) { name, folder, key in
                do throws(PlugboardError) {
                    if let object = try read(name, in: folder, expectedKey: key,
                                             includeData: false, action: "could not list object \(FileStorageText.quote(key))") {
                        objects.append(object.header.info)
                    }
                } catch {
                    onDamaged(error)
                }
            }
        } catch {
            throw error.storageError("could not list objects under prefix \(FileStorageText.quote(request.prefix))", root: root)
        }
        // The token names the last key the walk took, listed or not (it may have been
        // deleted meanwhile), so that the next page starts after it.
        let token = walk.more ? walk.lastKey.map { ListingRequest.continuationToken(after: $0) } : nil
        return ObjectListing(objects: objects, nextContinuationToken: token)
    }

    /// The walk through the folders for one page, in hex-digit space.
    private struct Walk {
        /// The prefix's digits: every listed key's digits start with them.
        let prefix: [UInt8]
        /// The continuation point's digits: every listed key's digits come after them.
        let after: [UInt8]?
        let limit: Int
        /// How many files the page has taken, and the key of the last one.
        var taken = 0
        var lastKey: String?
        /// Whether another matching file follows the last one taken.
        var more = false

        /// Starts at the objects folder; `take` is given each file of the page, in order:
        /// its name, the folder it is in (open only during the call) and its key.
        mutating func run(_ objects: Folder, take: (String, Folder, String) -> Void) throws(FileSystemError) {
            _ = try visit(folder: objects, digits: [], prefix: prefix, after: after, take: take)
        }

        /// Visits `folder`, whose keys' digits start with `digits`; `prefix` and `after` are
        /// what remains of the page's prefix and continuation point below it (`after` is
        /// nil when every key in the folder comes after it). Returns false once the page is
        /// complete.
        private mutating func visit(folder: Folder, digits: [UInt8], prefix: [UInt8], after: [UInt8]?,
                                    take: (String, Folder, String) -> Void) throws(FileSystemError) -> Bool {
            let entries = try FolderEntries.read(folder, prefix: prefix, after: after)
            entries.sort()
            for index in 0..<entries.count {
                let piece = entries.digits(index)
                let name = entries.name(index)
                if entries.isFile(index) {
                    // A name that spells no valid key was not written by FileStorage: skipped.
                    guard let key = ObjectPath.key(fromDigits: digits + piece) else { continue }
                    if taken == limit {
                        more = true
                        return false
                    }
                    taken += 1
                    lastKey = key
                    take(name, folder, key)
                } else {
                    let below = prefix.count > piece.count ? Array(prefix[piece.count...]) : []
                    var afterBelow: [UInt8]?
                    if let after, after.count > piece.count, after.starts(with: piece) {
                        afterBelow = Array(after[piece.count...])
                    }
                    let subfolder: Folder
                    do throws(FileSystemError) {
                        subfolder = try FileSystem.openFolder(name, in: folder)
                    } catch where [ENOENT, ENOTDIR, ELOOP].contains(error.code) {
                        // Deleted since the folder was read, or not a folder FileStorage made.
                        continue
                    }
                    if try !visit(folder: subfolder, digits: digits + piece, prefix: below, after: afterBelow, take: take) {
                        return false
                    }
                }
            }
            return true
        }
    }
}
