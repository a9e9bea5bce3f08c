#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes

/// A fleet host's state folder: `manifest.json`, the manifest the host reads (the one it
/// runs, or the candidate during a reload), and `applied.json`, the last manifest that
/// applied, which a host restarted while etcd is down starts from.
public struct FleetLocalCopy: Sendable {
    public let folder: String

    public init(folder: String) {
        self.folder = folder
    }

    /// The file the host reads as its manifest.
    public var manifestPath: String { "\(folder)/manifest.json" }
    var appliedPath: String { "\(folder)/applied.json" }

    /// Creates the folder (and those above it), owner-only.
    public func prepare() throws(PlugboardError) {
        var path = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw failure("could not create folder \"\(path)\"", errno) }
        }
    }

    /// The last applied manifest's bytes, or nil.
    public func applied() -> [UInt8]? { read(appliedPath) }

    /// Writes the manifest the host is to read next.
    public func setManifest(_ bytes: [UInt8]) throws(PlugboardError) { try write(manifestPath, bytes) }

    /// Keeps `bytes` as the last applied manifest.
    public func setApplied(_ bytes: [UInt8]) throws(PlugboardError) { try write(appliedPath, bytes) }

    private func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return try? DescriptorIO.readToEnd(fd, limit: 1 << 20)
    }

    /// Whole or not at all: a new file, synced, renamed over the old one.
    private func write(_ path: String, _ bytes: [UInt8]) throws(PlugboardError) {
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("could not write \"\(temporary)\"", errno) }
        do {
            try DescriptorIO.writeAll(fd, bytes)
        } catch let error {
            close(fd)
            unlink(temporary)
            throw failure("could not write \"\(temporary)\"", error.code)
        }
        fsync(fd)
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure("could not rename \"\(temporary)\" to \"\(path)\"", code)
        }
    }

    private func failure(_ what: String, _ code: Int32) -> PlugboardError {
        PlugboardError(.fleetLocalCopyFailed, "\(what): \(String(cString: strerror(code)))",
                       detail: "A fleet host keeps the manifest it runs in \"\(folder)\".",
                       hint: "Free space or fix the folder's permissions, or give another folder with --fleet-state.")
    }
}
