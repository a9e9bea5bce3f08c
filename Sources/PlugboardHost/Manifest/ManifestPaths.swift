import Glibc

/// Lexical file-path helpers for the manifest: absolute paths, folders, `.` removal.
///
/// `..` is kept, not folded: folding it lexically is wrong when the folder before it is
/// a symbolic link, and the file system resolves it correctly anyway.
enum ManifestPaths {
    /// The process's working folder, or `/` if it cannot be read.
    static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `path` made absolute against `base` (itself absolute), then normalized.
    static func absolute(_ path: String, base: String) -> String {
        normalize(path.hasPrefix("/") ? path : base + "/" + path)
    }

    /// Removes empty and `.` components and a trailing slash; keeps `..`.
    static func normalize(_ path: String) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        let joined = parts.joined(separator: "/")
        return path.hasPrefix("/") ? "/" + joined : (joined.isEmpty ? "." : joined)
    }

    /// The folder holding the file at absolute `path`.
    static func directory(of path: String) -> String {
        let normalized = normalize(path)
        guard let slash = normalized.lastIndex(of: "/") else { return "." }
        let folder = String(normalized[..<slash])
        return folder.isEmpty ? "/" : folder
    }
}
