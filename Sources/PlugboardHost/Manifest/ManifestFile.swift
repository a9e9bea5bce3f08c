import Glibc
import PlugboardAPI
import PlugboardBytes
import PlugboardJSON

/// Reads a manifest file's bytes, refusing what is not a readable regular file of
/// bounded size before reading it.
public enum ManifestFile {
    public static func read(path: String, maxBytes: Int) throws(PlugboardError) -> [UInt8] {
        let shown = ConfigValue.string(path).description
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw PlugboardError(.manifestNotFound, "manifest file \(shown) does not exist",
                detail: path.isEmpty ? "The manifest path is empty." : "The manifest path contains a NUL byte.",
                hint: "Give the path of a manifest file, such as plugins.json.")
        }
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on files.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw PlugboardError(.manifestNotFound, "manifest file \(shown) does not exist",
                    detail: "No file at \(ConfigValue.string(ManifestPaths.absolute(path, base: ManifestPaths.currentDirectory())).description).",
                    hint: "Create the manifest (docs/MANIFEST.md describes it), or give the path of an existing one.")
            }
            throw unreadable(shown, reason: errorText(code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(shown, reason: errorText(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let kind = info.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
            throw PlugboardError(.manifestUnreadable, "could not read manifest file \(shown): it is \(kind)",
                detail: "The manifest must be a regular file.",
                hint: "Give the path of the manifest file itself, such as plugins.json.")
        }
        guard Int(info.st_size) <= maxBytes else { throw tooLarge(path, size: Int(info.st_size), limit: maxBytes) }

        // Read until end of file, but never more than one byte over the limit (the file
        // may have grown since fstat).
        let bytes: [UInt8]
        do {
            bytes = try DescriptorIO.readToEnd(fd, limit: maxBytes + 1, sizeHint: Int(info.st_size))
        } catch {
            throw unreadable(shown, reason: errorText(error.code))
        }
        guard bytes.count <= maxBytes else { throw tooLarge(path, size: bytes.count, limit: maxBytes) }
        return bytes
    }

    private static func unreadable(_ shown: String, reason: String) -> PlugboardError {
        PlugboardError(.manifestUnreadable, "could not read manifest file \(shown): \(reason)",
                       detail: "The file exists but cannot be read.",
                       hint: "Check the file's permissions and that the host's user may read it.")
    }

    private static func tooLarge(_ path: String, size: Int, limit: Int) -> PlugboardError {
        PlugboardError(.manifestTooLarge, "\(path): file too large",
                       detail: "The file is \(size) bytes or more; the limit is \(limit) bytes.",
                       hint: "Shorten the file; a manifest lists plugins and their settings, not data.")
    }

    private static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text).lowercased()
    }
}
