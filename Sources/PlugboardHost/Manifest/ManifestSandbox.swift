/// A plugin entry's `"sandbox"` object: what the sandbox of its worker child grants when
/// the plugin runs isolated (docs/MANIFEST.md, docs/SECURITY.md).
///
/// ```json
/// "sandbox": {"memoryMB": 1024, "openFiles": 1024, "readWrite": ["data"], "readOnly": ["/etc/plugboard"]}
/// ```
///
/// Every key is optional. The paths are resolved against the manifest's folder, as a
/// plugin's `path` is; ``policy(pluginCache:)`` adds what loading any plugin needs.
public struct ManifestSandbox: Sendable, Hashable {
    /// 1,024 MiB when `memoryMB` is left out (``SandboxPolicy/defaultMemoryLimitBytes``).
    public static let defaultMemoryMB = Int(SandboxPolicy.defaultMemoryLimitBytes >> 20)
    /// 1,024 when `openFiles` is left out (``SandboxPolicy/defaultOpenFiles``).
    public static let defaultOpenFiles = Int(SandboxPolicy.defaultOpenFiles)
    /// `memoryMB`: from what a worker needs to start to 1 TiB.
    public static let memoryMBRange = Int(SandboxPolicy.minimumMemoryLimitBytes >> 20)...(1 << 20)
    /// `openFiles`: from a worker's own few to the kernel's default `fs.nr_open`.
    public static let openFilesRange = 16...(1 << 20)
    /// The keys of the object.
    static let keys = ["memoryMB", "openFiles", "readWrite", "readOnly"]

    /// `memoryMB`: the worker's writable memory, in MiB (`RLIMIT_DATA`).
    public var memoryMB: Int
    /// `openFiles`: the worker's open descriptors (`RLIMIT_NOFILE`).
    public var openFiles: Int
    /// `readWrite`, absolute: granted every file-system access (FileStorage's `root`).
    public var readWritePaths: [String]
    /// `readOnly`, absolute: granted reading, beyond what loading needs.
    public var readOnlyPaths: [String]

    /// The sandbox of an entry without `"sandbox"`: the defaults, no paths of its own.
    public init(memoryMB: Int = defaultMemoryMB, openFiles: Int = defaultOpenFiles,
                readWritePaths: [String] = [], readOnlyPaths: [String] = []) {
        self.memoryMB = memoryMB
        self.openFiles = openFiles
        self.readWritePaths = readWritePaths
        self.readOnlyPaths = readOnlyPaths
    }

    /// The policy the worker applies: these grants, plus ``SandboxPolicy/defaultReadWritePaths``
    /// and ``SandboxPolicy/defaultReadOnlyPaths(pluginCache:)`` for the cache folder of the
    /// staged copy it maps.
    public func policy(pluginCache: String?) -> SandboxPolicy {
        SandboxPolicy(memoryLimitBytes: UInt64(memoryMB) << 20, openFiles: UInt64(openFiles),
                      readWritePaths: readWritePaths + SandboxPolicy.defaultReadWritePaths,
                      readOnlyPaths: SandboxPolicy.defaultReadOnlyPaths(pluginCache: pluginCache) + readOnlyPaths)
    }
}
