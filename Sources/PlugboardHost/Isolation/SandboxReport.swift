/// What ``Sandbox/apply(_:reportDescriptor:keepDescriptors:)`` put in place, for the
/// worker to pass on to the host (the log, `/v1/admin/plugins`).
public struct SandboxReport: Sendable, Equatable, CustomStringConvertible {
    /// A path of the policy that was not granted because it could not be opened.
    public struct SkippedPath: Sendable, Equatable {
        /// The path as the policy lists it.
        public let path: String
        /// Why, such as "No such file or directory".
        public let reason: String
    }

    /// The kernel's Landlock ABI the file-system rules were made with, or nil when the
    /// kernel has none (then ``landlockUnavailableReason`` says why and file access is
    /// not limited).
    public let landlockABI: Int?
    /// Why Landlock is not in place, when ``landlockABI`` is nil.
    public let landlockUnavailableReason: String?
    /// Whether Landlock also keeps the plugin from signalling processes outside its sandbox
    /// (ABI 6 and later).
    public let signalsScoped: Bool
    /// Paths of the policy that were skipped, each with the reason.
    public let skippedPaths: [SkippedPath]
    /// `RLIMIT_DATA` as set.
    public let memoryLimitBytes: UInt64
    /// `RLIMIT_NOFILE` as set (the policy's value, or the hard limit if that was lower).
    public let openFiles: UInt64
    /// The descriptors left open, ascending.
    public let keptDescriptors: [Int32]
    /// True once the seccomp filter is installed; ``Sandbox/apply(_:reportDescriptor:keepDescriptors:)``
    /// throws rather than return without it.
    public let seccomp: Bool

    /// One line: `sandbox: seccomp on, landlock ABI 7 (signals scoped), memory 1024 MiB, 1024 open files, no core dumps, no capabilities`.
    public var description: String {
        var parts = ["seccomp \(seccomp ? "on" : "off")"]
        if let landlockABI {
            parts.append("landlock ABI \(landlockABI)\(signalsScoped ? " (signals scoped)" : "")")
        } else {
            parts.append("landlock not available (\(landlockUnavailableReason ?? "unknown"))")
        }
        parts.append("memory \(memoryLimitBytes >> 20) MiB")
        parts.append("\(openFiles) open files")
        parts.append("no core dumps, no capabilities")
        if !skippedPaths.isEmpty {
            parts.append("skipped " + skippedPaths.map { "\($0.path) (\($0.reason))" }.joined(separator: ", "))
        }
        return "sandbox: " + parts.joined(separator: ", ")
    }
}
