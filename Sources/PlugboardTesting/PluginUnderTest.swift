#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardHost

/// Loads a plugin's built `.so` the way `plugboard` does — path and permission checks, the
/// ELF and plugin headers, the toolchain stamp, the content-addressed cache, `dlopen`, the
/// handshake, registration in one transaction — into a fresh container, so a plugin's own
/// tests see exactly the refusals and the services the host would.
///
/// ```swift
/// let plugin = try await PluginUnderTest.load(product: "AcmeStorage", config: ["bucket": "test"])
/// let report = await plugin.objectStorageConformance().run()
/// #expect(report.allPassed, "\(report)")
/// ```
public enum PluginUnderTest {
    /// Loads the plugin file at `path` into a new container.
    ///
    /// - Parameters:
    ///   - path: The plugin's `.so` file.
    ///   - name: The plugin's name in the (imagined) manifest; by default the file's name
    ///     without `lib` and `.so`.
    ///   - config: The plugin's `config` object, as `plugins.json` would give it.
    ///   - environment: The container's environment.
    ///   - baseDirectory: What relative paths in `config` are relative to (the manifest's
    ///     folder, for the host); nil leaves them relative to the working directory.
    /// - Throws: the loader's refusal or the plugin's registration error, exactly as
    ///   `plugboard check` would print it (`loader.*`, `plugin.*`, `container.*`).
    public static func load(path: String, name: String? = nil, config: [String: ConfigValue] = [:],
                            environment: Environment = .testing,
                            baseDirectory: String? = nil) async throws(PlugboardError) -> LoadedPlugin {
        let name = name ?? defaultName(path)
        let container = Container(environment: environment)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cacheDirectory,
                                                                                  processEnvironment: ProcessEnvironmentSnapshot.capture()))
        return try await load(path: path, name: name, config: config, baseDirectory: baseDirectory, rank: 0, wraps: nil, requires: nil,
                              with: loader)
    }

    /// Loads several of the package's plugin products into ONE container, in order, as a
    /// manifest listing them would: a plugin that resolves another's service (through a
    /// contract package) is tested with its provider loaded first.
    ///
    /// ```swift
    /// let plugins = try await PluginUnderTest.load(products: ["AcmeProvider", "AcmeConsumer"])
    /// let value = try plugins[1].container.resolve(String.self, name: "AcmeConsumer")
    /// ```
    ///
    /// - Parameters:
    ///   - products: The products, each built as `lib<product>.so` next to the test runner.
    ///   - configs: Each plugin's `config` object, by product name.
    /// - Returns: One ``LoadedPlugin`` per product, in the order given, all sharing the one
    ///   container. Every product has rank 0, so among providers of one service the first
    ///   loaded wins; to test a plugin that wraps another, use ``load(_:environment:baseDirectory:)``
    ///   with `wraps` (or ranks).
    /// - Throws: the first refusal or registration error, as `plugboard check` would print it.
    public static func load(products: [String], configs: [String: [String: ConfigValue]] = [:],
                            environment: Environment = .testing,
                            baseDirectory: String? = nil) async throws(PlugboardError) -> [LoadedPlugin] {
        try await load(products.map { Entry(product: $0, config: configs[$0] ?? [:]) }, environment: environment,
                       baseDirectory: baseDirectory)
    }

    /// One plugin of ``load(_:environment:baseDirectory:)``, as a manifest entry would
    /// list it: its product (or file), name, config, rank, the plugin it wraps and the
    /// plugins it requires (those a factory of it may resolve by owner, as in a manifest).
    public struct Entry: Sendable {
        public var path: String?
        public var product: String?
        public var name: String
        public var config: [String: ConfigValue]
        public var rank: Int
        public var wraps: String?
        public var requires: [String]

        /// `lib<product>.so` from the products folder; `name` defaults to the product.
        public init(product: String, name: String? = nil, config: [String: ConfigValue] = [:], rank: Int = 0,
                    wraps: String? = nil, requires: [String] = []) {
            self.product = product
            self.name = name ?? product
            self.config = config
            self.rank = rank
            self.wraps = wraps
            self.requires = requires
        }

        /// The plugin file at `path`.
        public init(path: String, name: String, config: [String: ConfigValue] = [:], rank: Int = 0, wraps: String? = nil,
                    requires: [String] = []) {
            self.path = path
            self.name = name
            self.config = config
            self.rank = rank
            self.wraps = wraps
            self.requires = requires
        }
    }

    /// Loads plugins into ONE container, in order, each with its rank and the plugin it
    /// wraps, as a manifest listing them would. A layer (`wraps`) stands above the provider
    /// it wraps whatever the ranks, so the storage the container resolves, and the
    /// conformance suite of the layer's ``LoadedPlugin``, test the layer and not its
    /// backing.
    ///
    /// ```swift
    /// let plugins = try await PluginUnderTest.load([
    ///     .init(product: "MemoryStorage", name: "Backing"),
    ///     .init(product: "QuotaStorage", name: "Quota", config: ["maxBytes": .integer(1024)], wraps: "Backing"),
    /// ])
    /// let report = await plugins[1].objectStorageConformance().run()
    /// ```
    ///
    /// - Returns: One ``LoadedPlugin`` per entry, in the order given, all sharing the one
    ///   container: what each registered and reports, and the container they share.
    /// - Throws: the first refusal or registration error, as `plugboard check` would print it
    ///   (a layer whose target registered no such service: `container.layer_target_missing`).
    public static func load(_ entries: [Entry], environment: Environment = .testing,
                            baseDirectory: String? = nil) async throws(PlugboardError) -> [LoadedPlugin] {
        let container = Container(environment: environment)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cacheDirectory,
                                                                                  processEnvironment: ProcessEnvironmentSnapshot.capture()))
        var loaded: [LoadedPlugin] = []
        for entry in entries {
            let path: String
            if let given = entry.path { path = given } else { path = try builtProduct(entry.product ?? entry.name) }
            loaded.append(try await load(path: path, name: entry.name, config: entry.config, baseDirectory: baseDirectory,
                                         rank: entry.rank, wraps: entry.wraps,
                                         requires: entry.requires, with: loader))
        }
        return loaded
    }

    private static func load(path: String, name: String, config: [String: ConfigValue], baseDirectory: String?,
                             rank: Int, wraps: String?, requires: [String]?,
                             with loader: PluginLoader) async throws(PlugboardError) -> LoadedPlugin {
        let record = await loader.load(.init(
            name: name, path: path, config: PluginConfig(config, plugin: name, baseDirectory: baseDirectory), rank: rank,
            wraps: wraps, requires: requires))
        guard record.state == .active else {
            throw record.error ?? PlugboardError(.registrationFailed, "plugin \"\(name)\" is \(record.state) after loading \(path)")
        }
        return LoadedPlugin(container: loader.container, record: record)
    }

    /// Loads `lib<product>.so` from the folder the running tests were built into, which
    /// is where `swift build` and `swift test` put the package's library products.
    public static func load(product: String, name: String? = nil, config: [String: ConfigValue] = [:],
                            environment: Environment = .testing,
                            baseDirectory: String? = nil) async throws(PlugboardError) -> LoadedPlugin {
        try await load(path: try builtProduct(product), name: name ?? product, config: config, environment: environment,
                       baseDirectory: baseDirectory)
    }

    private static func builtProduct(_ product: String) throws(PlugboardError) -> String {
        let path = productPath(product)
        guard access(path, F_OK) == 0 else {
            throw PlugboardError(.pluginFileNotFound, "plugin product \"\(product)\" has not been built",
                                 detail: "Expected \(path), next to the test runner.",
                                 hint: "Declare it as a dynamic library product in Package.swift; swift build and swift test build it there.")
        }
        return path
    }

    /// `lib<product>.so` in ``productsFolder``.
    public static func productPath(_ product: String) -> String { "\(productsFolder)/lib\(product).so" }

    /// The folder the running test executable was built into (`.build/<triple>/debug`),
    /// outside any `.xctest` bundle.
    public static var productsFolder: String {
        var folder = parent(realPath("/proc/self/exe") ?? ".")
        while folder.hasSuffix(".xctest") || folder.contains(".xctest/") { folder = parent(folder) }
        return folder
    }

    private static func defaultName(_ path: String) -> String {
        var file = path.split(separator: "/").last.map(String.init) ?? path
        if file.hasPrefix("lib") { file.removeFirst(3) }
        if let dot = file.firstIndex(of: ".") { file = String(file[..<dot]) }
        return file.isEmpty ? path : file
    }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// One cache for the whole test process (it is content-addressed, so loads share it),
    /// under `$TMPDIR`, private to the user as the loader requires.
    private static let cacheDirectory: String = {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/plugboard-test-cache-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let start = buffer.baseAddress, mkdtemp(start) != nil else { return nil }
            return String(cString: start)
        }
        let folder = made ?? "\(base)/plugboard-test-cache-\(getpid())"
        atexit { PluginUnderTest.removeCache() }
        return folder
    }()

    /// Removes the cache folder and everything in it, without following links.
    private static func removeCache() { removeTree(cacheDirectory) }

    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR, let folder = opendir(path) {
            var names: [String] = []
            while let entry = readdir(folder) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(folder)
            for name in names { removeTree("\(path)/\(name)") }
        }
        _ = remove(path)
    }
}

/// A plugin loaded by ``PluginUnderTest``: its container and what it declared.
public struct LoadedPlugin: Sendable {
    /// The fresh container the plugin registered into.
    public let container: Container
    /// The plugin's name, as loaded.
    public let name: String
    /// The version the plugin reports.
    public let version: String?
    /// The services it registered, as `plugboard services` names them.
    public let services: [String]
    /// The plugin header read from the file.
    public let header: PluginHeader?
    /// The file's real path and SHA-256.
    public let path: String
    public let sha256: String

    init(container: Container, record: PluginRecord) {
        self.container = container
        name = record.name
        version = record.version
        services = record.services
        header = record.header
        path = record.path ?? ""
        sha256 = record.sha256 ?? ""
    }

    /// The highest-ranked `ObjectStorage` the plugin registered.
    public func storage() throws(PlugboardError) -> any ObjectStorage {
        try container.resolve((any ObjectStorage).self)
    }

    /// The conformance suite over this plugin's storage (one shared instance: each rule
    /// works under its own key prefix and deletes what it wrote).
    public func objectStorageConformance(options: ObjectStorageConformance.Options = .init()) -> ObjectStorageConformance {
        let container = self.container
        return ObjectStorageConformance(makeStorage: { try container.resolve((any ObjectStorage).self) }, options: options)
    }

    /// Stops the plugin's managed services, as the host does when it exits.
    public func shutdown() async {
        await container.shutdown()
    }
}
