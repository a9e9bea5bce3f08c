#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI

/// A plugin file loaded while a newer build of the same product sits in the same SwiftPM
/// build folder: the manifest names `.build/release/libX.so`, and the author has since run
/// `swift build` and `swift test`, which write `.build/debug/libX.so` and leave the release
/// file as it was. Loading the old file is correct (it is the one named), but silent, and
/// every test the author ran was green on the new one; so the host says so.
///
/// Only for a plugin the manifest names by `path`, the one way a manifest picks a build
/// folder and a configuration. A `product` is the file the host finds beside itself (or in
/// `PLUGBOARD_PLUGIN_PATH`): the host's own in-tree products, whose debug and release
/// copies sit side by side in every package that builds the SDK (a plugin author's among
/// them), and a copy of another configuration there is no mistake of the manifest's. A
/// remote `source` is pinned by its digest and loaded from the cache.
public struct StaleBuild: Sendable, Equatable {
    /// A newer build of the product.
    public struct Newer: Sendable, Equatable {
        /// Its real path.
        public let path: String
        /// When it was last written.
        public let modified: Timestamp
    }

    /// The real path of the file loaded.
    public let loadedPath: String
    /// When the file loaded was last written.
    public let loadedModified: Timestamp
    /// The builds of the same file name in the same build folder written after it, newest first.
    public let newer: [Newer]
    /// The manifest as it was given (`--manifest`), which the hint names.
    public var manifestPath = "plugins.json"

    /// The build configuration of the file loaded (`release`, `debug`), from its folder's name.
    public var configuration: String {
        PluginFile.parentFolder(loadedPath).split(separator: "/").last.map(String.init) ?? ""
    }

    /// The warning as `check` prints it: what was loaded, what is newer, both with times.
    public var warning: PlugboardError {
        let file = loadedPath.split(separator: "/").last.map(String.init) ?? loadedPath
        let listed = newer.map { "\(PlugboardError.quoted($0.path, maxCharacters: 4096)) (written \($0.modified.iso8601))" }
        let rebuild = ["debug", "release"].contains(configuration)
            ? "Run swift build -c \(configuration) in the plugin's package to rebuild the file the manifest names"
            : "Rebuild the file the manifest names"
        return PlugboardError(.newerBuildBeside, "a newer build of \(file) sits beside the one loaded",
                              detail: "Loaded \(PlugboardError.quoted(loadedPath, maxCharacters: 4096)) (written \(loadedModified.iso8601)); newer: \(listed.joined(separator: ", ")).",
                              hint: "\(rebuild), or point the plugin's path in \(manifestPath) at the newer build.")
    }

    /// The newer builds of the file at `path`, or nil when there are none or the file is
    /// not in a SwiftPM build folder.
    ///
    /// The build folder is the nearest `.build` above the file's real path, or, for a
    /// `--scratch-path` of another name, the folder two above a `debug` or `release` one
    /// (SwiftPM writes `<scratch>/<triple>/<configuration>/`). Within it, the file's name is
    /// looked for one and two levels down, which covers every configuration and triple.
    public static func find(for path: String) -> StaleBuild? {
        guard let loaded = PluginFile.realPath(path), let loadedTime = modified(loaded),
              let root = buildFolder(of: loaded) else { return nil }
        let name = loaded.split(separator: "/").last.map(String.init) ?? loaded
        var seen: Set<String> = [loaded]
        var newer: [Newer] = []
        let level1 = subfolders(root)
        for folder in [root] + level1 + level1.flatMap(subfolders) {
            guard let candidate = PluginFile.realPath("\(folder)/\(name)"), seen.insert(candidate).inserted,
                  let time = modified(candidate), loadedTime < time else { continue }
            newer.append(Newer(path: candidate, modified: time))
        }
        guard !newer.isEmpty else { return nil }
        return StaleBuild(loadedPath: loaded, loadedModified: loadedTime, newer: newer.sorted { $1.modified < $0.modified })
    }

    /// The stale builds among the plugins a command loaded or tried to load, by plugin
    /// name: a failed or refused one too, since its newer build may be the fix. Only the
    /// plugins `manifest` names by `path` are looked at (see the type's discussion).
    public static func find(in records: [PluginRecord], manifest: Manifest) -> [String: StaleBuild] {
        var found: [String: StaleBuild] = [:]
        for r in records where [.active, .failed, .rejected].contains(r.state) {
            guard case .path? = manifest.plugin(named: r.name)?.source,
                  let path = r.path, var stale = find(for: path) else { continue }
            stale.manifestPath = manifest.path
            found[r.name] = stale
        }
        return found
    }

    static func buildFolder(of file: String) -> String? {
        var folder = PluginFile.parentFolder(file)
        let configurationFolder = folder
        while folder != "/" && folder != "." {
            if folder.hasSuffix("/.build") { return folder }
            folder = PluginFile.parentFolder(folder)
        }
        let configuration = configurationFolder.split(separator: "/").last
        guard configuration == "debug" || configuration == "release" else { return nil }
        let root = PluginFile.parentFolder(PluginFile.parentFolder(configurationFolder))
        return root == "/" ? nil : root
    }

    /// The folders directly in `folder` (links to folders included: `.build/debug` is one).
    static func subfolders(_ folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var found: [String] = []
        while let entry = readdir(dir) {
            let name = PluginCache.name(of: entry)
            guard name != "." && name != ".." else { continue }
            var info = stat()
            if stat("\(folder)/\(name)", &info) == 0, info.st_mode & S_IFMT == S_IFDIR { found.append("\(folder)/\(name)") }
        }
        return found.sorted()
    }

    static func modified(_ path: String) -> Timestamp? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Timestamp(secondsSince1970: Int64(info.st_mtim.tv_sec), nanoseconds: Int32(info.st_mtim.tv_nsec))
    }
}
