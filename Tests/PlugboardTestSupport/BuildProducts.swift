#if canImport(Glibc)
import Glibc
#endif

/// Where the tests find what the package built, and where they put their own files;
/// without Foundation, so that the plugin and loader tests stay free of it.
public enum BuildProducts {
    /// The folder with the package's build products (`.build/<triple>/debug`): the test
    /// runner's own folder, outside any `.xctest` bundle it may sit in.
    public static let folder: String = {
        var folder = parent(realPath("/proc/self/exe") ?? ".")
        while folder.contains(".xctest") { folder = parent(folder) }
        return folder
    }()

    /// `lib<name>.so` in the products folder.
    public static func library(_ name: String) -> String { "\(folder)/lib\(name).so" }

    /// A fresh folder under /tmp, mode 0755 whatever the umask, so that the loader's
    /// folder checks pass on it.
    public static func temporaryFolder(_ label: String) -> String {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        let path = made ?? "/tmp/\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(path, 0o755)
        chmod(path, 0o755)
        return path
    }

    private static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
