import PlugboardAPI

extension FileStorage {
    /// How a ``FileStorage`` is set up, validated once from the plugin's `config`.
    ///
    /// ```json
    /// { "name": "FileStorage", "product": "FileStorage",
    ///   "config": { "root": "/var/lib/plugboard/objects", "fsync": true } }
    /// ```
    struct Configuration: Sendable, Equatable {
        /// The configuration keys FileStorage knows; any other is refused.
        static let keys: Set<String> = ["root", "fsync"]
        /// The longest root path, in bytes, so that every object path (up to 2,060 bytes
        /// below the root) stays within PATH_MAX.
        static let maxRootByteCount = 1024

        /// The folder that holds the store, absolute and without `.` components or
        /// doubled slashes. Created (mode 0700) at start when missing.
        var root: String
        /// Whether each write and delete is flushed to stable storage (`fsync` of the file
        /// and of its folder) before it returns. Default `true`. With `false`, objects stay
        /// whole after the process is killed, but the last writes may be lost when the
        /// machine loses power.
        var fsync: Bool

        /// A configuration with visible defaults.
        ///
        /// - Parameter root: An absolute folder path.
        init(root: String, fsync: Bool = true) {
            self.root = root
            self.fsync = fsync
        }

        /// Reads and checks the plugin's `config`.
        ///
        /// A relative `root` is taken relative to the manifest's folder (the config's
        /// `baseDirectory`), or, for a config that has none (a plugin loaded outside a
        /// manifest), to `currentDirectory`, the process's working directory.
        ///
        /// - Throws: `plugin.config_invalid` naming the key for an unknown key, a missing or
        ///   empty `root`, a `root` with NUL or longer than 1024 bytes, a relative `root`
        ///   when the working directory is unknown, or a value of the wrong type.
        init(_ config: PluginConfig, currentDirectory: String?) throws(PlugboardError) {
            try config.requireOnly(Self.keys)
            let written = try config.string("root")
            let fsync = try config.bool("fsync", default: true)
            if written.isEmpty {
                throw Self.invalid(config, "root", "a folder path", "an empty string")
            }
            if written.utf8.contains(0) {
                throw Self.invalid(config, "root", "a folder path", "a string containing NUL")
            }
            let absolute: String
            if written.utf8.first == UInt8(ascii: "/") {
                absolute = written
            } else if let base = config.baseDirectory ?? currentDirectory {
                absolute = base + "/" + written
            } else {
                throw PlugboardError(
                    .configInvalid, "plugin \"\(config.plugin)\": cannot resolve relative \"\(config.path).root\" \(FileStorageText.quote(written))",
                    detail: "A relative root is taken relative to the working directory, which the process cannot read (it may have been removed).",
                    hint: "Give \"root\" as an absolute path.")
            }
            let root = Self.normalized(absolute)
            if root.utf8.count > Self.maxRootByteCount {
                throw Self.invalid(config, "root", "a folder path of at most \(Self.maxRootByteCount) bytes",
                                   "\(root.utf8.count) bytes")
            }
            self.init(root: root, fsync: fsync)
        }

        /// `path` without empty or `.` components; `..` is kept as written, since folding it
        /// would be wrong after a symbolic link (the manifest's rule for paths).
        static func normalized(_ path: String) -> String {
            let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
            return "/" + parts.joined(separator: "/")
        }

        private static func invalid(_ config: PluginConfig, _ key: String, _ expected: String, _ found: String) -> PlugboardError {
            PlugboardError(
                .configInvalid, "plugin \"\(config.plugin)\": invalid value for configuration key \"\(config.path).\(key)\"",
                detail: "Expected \(expected), found \(found).",
                hint: "Correct \"\(key)\" in the plugin's config in \(config.manifest ?? "the manifest").")
        }
    }
}
