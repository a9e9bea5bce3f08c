import PlugboardAPI
import PlugboardJSON

/// Reads a manifest file and validates it into a ``Manifest``.
///
/// ``Manifest/load(path:)`` and ``Manifest/parse(bytes:path:)`` use a loader with the
/// default configuration; make one yourself to change the limits or the folder that a
/// relative manifest path is taken from.
///
/// Validation reads the document in order and stops at the first error: first
/// `schemaVersion` (a manifest for another version may use other keys), then every
/// member in the order written (unknown keys, types, values, duplicate plugin names),
/// then missing keys, then the requirements between plugins (names not in the manifest,
/// then cycles).
public struct ManifestLoader: Sendable {
    /// How a loader reads manifests.
    public struct Configuration: Sendable, Hashable {
        /// The largest manifest and the deepest nesting accepted. Default 1 MiB, 64 levels.
        public var limits: JSONParser.Limits
        /// The folder a relative manifest path is taken from; nil for the process's
        /// working folder at the time of loading. Default nil.
        public var workingDirectory: String?

        /// Creates a configuration.
        public init(limits: JSONParser.Limits = .init(maxBytes: 1 << 20, maxDepth: 64),
                    workingDirectory: String? = nil) {
            self.limits = limits
            self.workingDirectory = workingDirectory
        }
    }

    /// The top-level keys.
    static let topLevelKeys = ["$schema", "schemaVersion", "environment", "plugins", "hotSwap", "s3", "trust"]

    /// How this loader reads manifests.
    public let configuration: Configuration

    /// Creates a loader.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Reads and validates the manifest file at `path`.
    ///
    /// - Throws: `manifest.not_found` when there is no file, `manifest.unreadable` when
    ///   it cannot be read, `manifest.too_large` when it is over the limit (checked before
    ///   reading), or any error of ``parse(bytes:path:)``.
    public func load(path: String) throws(PlugboardError) -> Manifest {
        let bytes = try ManifestFile.read(path: path, maxBytes: configuration.limits.maxBytes)
        return try parse(bytes: bytes, path: path)
    }

    /// Validates a manifest's bytes.
    ///
    /// - Parameters:
    ///   - bytes: the manifest, UTF-8 JSON.
    ///   - path: the manifest's path; it starts every message, and relative paths in the
    ///     manifest are relative to its folder.
    /// - Throws: a `manifest.` error saying where and what.
    public func parse(bytes: [UInt8], path: String) throws(PlugboardError) -> Manifest {
        let root = try JSONParser.parse(bytes, source: path, limits: configuration.limits)
        let base = configuration.workingDirectory.map { ManifestPaths.absolute($0, base: "/") }
            ?? ManifestPaths.currentDirectory()
        let directory = ManifestPaths.directory(of: ManifestPaths.absolute(path, base: base))
        let decoder = ManifestDecoder(reader: ManifestReader(source: path), directory: directory)
        return try decoder.decode(root)
    }
}
