#if canImport(Glibc)
import Glibc
#endif
import CPlugboardSandbox

/// What the sandbox of an isolated plugin's worker child allows: the limits it sets and the
/// file-system paths it grants. ``Sandbox/apply(_:reportDescriptor:keepDescriptors:)``
/// applies it; docs/SECURITY.md says what each part stops.
///
/// The paths are absolute; each grants the path and everything beneath it. A path that
/// does not exist when the sandbox is applied is skipped with a note (see
/// ``SandboxReport/skippedPaths``), so one list serves machines laid out differently.
///
/// ```swift
/// let policy = SandboxPolicy(readWritePaths: ["/srv/objects"] + SandboxPolicy.defaultReadWritePaths,
///                            readOnlyPaths: SandboxPolicy.defaultReadOnlyPaths(pluginCache: cache))
/// ```
public struct SandboxPolicy: Sendable, Equatable {
    /// 1 GiB: ``memoryLimitBytes`` when the manifest sets none.
    public static let defaultMemoryLimitBytes: UInt64 = 1 << 30
    /// 1,024: ``openFiles`` when the manifest sets none.
    public static let defaultOpenFiles: UInt64 = 1024
    /// The least memory limit a worker can run under: its Swift runtime, the plugin's
    /// libraries' writable data and a few threads' stacks (8 MiB each) come to about 50 MiB.
    public static let minimumMemoryLimitBytes: UInt64 = 64 << 20

    /// The most memory the process may map writable (`RLIMIT_DATA`): its heap, anonymous
    /// mappings and thread stacks. Past it `malloc` returns NULL (a Swift allocation then
    /// traps and the child dies); reservations without access (malloc's arenas, guard
    /// pages) and read-only mappings of files (the libraries' code) do not count, which is
    /// why this is not `RLIMIT_AS` (docs/SECURITY.md).
    public var memoryLimitBytes: UInt64
    /// The most descriptors the process may hold open (`RLIMIT_NOFILE`); a higher number
    /// than the process's hard limit is lowered to it.
    public var openFiles: UInt64
    /// Granted every file-system access: the plugin's data (FileStorage's `root`).
    public var readWritePaths: [String]
    /// Granted reading files and listing folders: what loading and running the plugin needs.
    public var readOnlyPaths: [String]

    /// A policy; the defaults grant nothing beyond what loading a plugin needs, given the
    /// plugin cache `pluginCache` (see ``defaultReadOnlyPaths(pluginCache:)``).
    public init(memoryLimitBytes: UInt64 = defaultMemoryLimitBytes, openFiles: UInt64 = defaultOpenFiles,
                readWritePaths: [String] = defaultReadWritePaths, readOnlyPaths: [String]) {
        self.memoryLimitBytes = memoryLimitBytes
        self.openFiles = openFiles
        self.readWritePaths = readWritePaths
        self.readOnlyPaths = readOnlyPaths
    }

    /// Written to by code everywhere (a discarded output): `/dev/null`.
    public static let defaultReadWritePaths = ["/dev/null"]

    /// What a worker needs to read to load and run a plugin:
    ///
    /// - the Swift runtime's folder (where the loaded `libswiftCore.so` is) and the
    ///   executable's folder (`libPlugboardAPI.so`, the plugins' libraries beside it);
    /// - `pluginCache`, the folder of the staged copy the worker maps, when given;
    /// - the system's libraries and the dynamic loader's cache: `/usr/lib`, `/lib`,
    ///   `/lib64`, `/etc/ld.so.cache`;
    /// - TLS trust (`/etc/ssl`, `/etc/ca-certificates`, `/usr/share/ca-certificates`) and
    ///   name resolution (`/etc/resolv.conf`, `/etc/hosts`, `/etc/nsswitch.conf`,
    ///   `/etc/gai.conf`), since the network stays open (S3Storage);
    /// - time zones (`/etc/localtime`, `/usr/share/zoneinfo`);
    /// - `/proc`: libdispatch's thread-pool monitor reads `/proc/<tid>/stat` for each of its
    ///   threads, a top-level entry, not one beneath `/proc/self`, and traps when it cannot.
    ///   Other processes' entries are then readable as they are to any user (`ps`); their
    ///   `environ` and `mem` are not: Landlock refuses ptrace-mode access to a process
    ///   outside the sandbox once the worker has no `CAP_SYS_PTRACE`, which `apply` drops;
    /// - the CPU count (`/sys/devices/system/cpu`, which Dispatch and the Swift runtime
    ///   read) and `/dev/urandom`, `/dev/random`.
    public static func defaultReadOnlyPaths(pluginCache: String?) -> [String] {
        var paths: [String] = []
        if let runtime = loadedLibraryFolder("libswiftCore.so") { paths.append(runtime) }
        if let executable = executableFolder() { paths.append(executable) }
        if let pluginCache { paths.append(pluginCache) }
        return paths + [
            "/usr/lib", "/lib", "/lib64", "/etc/ld.so.cache",
            "/etc/ssl", "/etc/ca-certificates", "/usr/share/ca-certificates",
            "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf",
            "/etc/localtime", "/usr/share/zoneinfo",
            "/proc", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random",
        ]
    }

    /// The folder of the loaded shared object named `name`, from the dynamic loader's list.
    static func loadedLibraryFolder(_ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = plugboard_sandbox_loaded_library_path(name, &buffer, buffer.count)
        guard length > 0 else { return nil }
        return ManifestPaths.directory(of: String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    private static func executableFolder() -> String? {
        guard let pointer = realpath("/proc/self/exe", nil) else { return nil }
        defer { free(pointer) }
        return ManifestPaths.directory(of: String(cString: pointer))
    }
}
