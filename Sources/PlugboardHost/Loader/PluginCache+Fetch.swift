#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

// What a remote source needs of the cache: to tell whether `<sha256>.so` is there, and to
// write it from a stream that is hashed as it arrives.
extension PluginCache {
    /// `<cache>/<sha256>.so` when it passes the checks a reused entry must pass (opened
    /// without following a link, a regular file of the user's, mode 0500) and its bytes hash
    /// to `sha256`; nil when it is missing or fails any of them (then it is fetched anew,
    /// and the rename replaces whatever was there).
    func verifiedEntry(sha256: String) throws(PlugboardError) -> String? {
        let folder = try openFolder()
        defer { close(folder) }
        let name = "\(sha256).so"
        // O_NONBLOCK: a FIFO in place of the entry must not hang the open.
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(), st.st_mode & 0o7777 == 0o500,
              Int(st.st_size) <= PluginFile.maxSize,
              let bytes = try? PluginFile.readAll(fd: fd, path: name, plugin: name),
              try Digest.sha256Hex(bytes) == sha256 else { return nil }
        return "\(directory)/\(name)"
    }

    /// Writes `<cache>/<sha256>.so` from the pieces `next` hands over (nil after the last),
    /// hashing them as they come, into a temporary file of the cache folder; renamed into
    /// place only when the digest is `sha256`, so a wrong file never gets the name of the
    /// right one and nothing of it can be mapped. Returns the entry's path.
    ///
    /// - Throws: `loader.checksum_mismatch` naming both digests and `source`,
    ///   `loader.file_too_large` beyond ``PluginFile/maxSize``, `loader.cache_failed`, or
    ///   what `next` throws; the temporary file is removed in every case.
    func write(sha256: String, source: String, plugin: String,
               from next: () throws(PlugboardError) -> [UInt8]?) throws(PlugboardError) -> String {
        let folder = try openFolder()
        defer { close(folder) }
        let name = "\(sha256).so"
        let temp = ".fetch-\(sha256.prefix(16))-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = openat(folder, temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw cacheError("could not create \"\(directory)/\(temp)\"", errno) }
        do throws(PlugboardError) {
            defer { close(fd) }
            var hasher: SHA256Hasher
            do { hasher = try SHA256Hasher() } catch { throw PlugboardError(.cacheFailed, "could not compute SHA-256: \(error.message)", hint: error.hint) }
            var total = 0
            while let piece = try next() {
                total += piece.count
                guard total <= PluginFile.maxSize else {
                    throw PlugboardError(.fileTooLarge, "plugin file \(PlugboardError.quoted(source, maxCharacters: 512)) of plugin \"\(plugin)\" is too large",
                        detail: "The store sent more than \(PluginFile.maxSize) bytes, the most the loader accepts.",
                        hint: "Check that the source names the plugin's .so file.")
                }
                piece.withUnsafeBytes { hasher.update($0) }
                do {
                    try DescriptorIO.writeAll(fd, piece)
                } catch let failure {
                    throw cacheError("could not write \"\(directory)/\(temp)\"", failure.code)
                }
            }
            let found: String
            do { found = Hex.encode(try hasher.finalize()) } catch { throw PlugboardError(.cacheFailed, "could not compute SHA-256: \(error.message)", hint: error.hint) }
            guard found == sha256 else {
                throw PlugboardError(.checksumMismatch, "plugin file \(PlugboardError.quoted(source, maxCharacters: 512)) of plugin \"\(plugin)\" does not match its pin",
                    detail: "Expected SHA-256 \(sha256), found \(found) in the \(total) bytes the store sent; nothing of it was kept or mapped.",
                    hint: "If the file was replaced on purpose, update \"sha256\" (plugboard publish prints it); otherwise the store holds another file under this key.")
            }
            guard fchmod(fd, 0o500) == 0 else { throw cacheError("could not write \"\(directory)/\(name)\"", errno) }
            guard renameat(folder, temp, folder, name) == 0 else { throw cacheError("could not write \"\(directory)/\(name)\"", errno) }
        } catch {
            unlinkat(folder, temp, 0)
            throw error
        }
        return "\(directory)/\(name)"
    }
}
