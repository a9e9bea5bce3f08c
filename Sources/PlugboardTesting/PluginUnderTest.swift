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
        // A provider that a later entry's layer wraps gets the kit's observer above it, so
        // that the rule layer_keeps_reads_streamed sees what reaches it through the layer.
        let wrapped = Set(entries.compactMap(\.wraps))
        var observed: [String: LayerBelow] = [:]
        var loaded: [LoadedPlugin] = []
        for entry in entries {
            let path: String
            if let given = entry.path { path = given } else { path = try builtProduct(entry.product ?? entry.name) }
            if wrapped.contains(entry.name), entry.wraps == nil {
                let (plugin, below) = try await loadObserved(entry, path: path, baseDirectory: baseDirectory, with: loader)
                loaded.append(plugin)
                observed[entry.name] = below
                continue
            }
            var plugin = try await load(path: path, name: entry.name, config: entry.config, baseDirectory: baseDirectory,
                                        rank: entry.rank, wraps: entry.wraps,
                                        requires: entry.requires, with: loader)
            plugin.below = entry.wraps.flatMap { observed[$0] }
            loaded.append(plugin)
        }
        return loaded
    }

    /// Loads a provider that a layer will wrap under a name of its own,
    /// `<name>-under-observer`, one rank lower, and registers in `<name>`'s place an
    /// ``ObservingStorage`` over its `ObjectStorage`: the layer wrapping `<name>` is handed
    /// the observer, which forwards every call as it is. A provider of no `ObjectStorage`
    /// is loaded as it is.
    private static func loadObserved(_ entry: Entry, path: String, baseDirectory: String?,
                                     with loader: PluginLoader) async throws(PlugboardError) -> (LoadedPlugin, LayerBelow?) {
        let inner = "\(entry.name)-under-observer"
        let asItIs = { () async throws(PlugboardError) -> LoadedPlugin in
            try await load(path: path, name: entry.name, config: entry.config, baseDirectory: baseDirectory,
                           rank: entry.rank, wraps: nil, requires: entry.requires, with: loader)
        }
        var plugin: LoadedPlugin
        do {
            plugin = try await load(path: path, name: inner, config: entry.config, baseDirectory: baseDirectory,
                                    rank: entry.rank - 1, wraps: nil, requires: entry.requires, with: loader)
        } catch {
            // The refusal as the test expects to read it: naming the entry, not the kit's name.
            return (try await asItIs(), nil)
        }
        plugin.name = entry.name
        guard plugin.services.contains("PlugboardAPI.ObjectStorage") else {
            // Nothing to observe: the entry under its own name, as the manifest says.
            let removal = loader.container.makeTransaction(owner: inner, rank: entry.rank - 1, wraps: nil, requires: nil)
            removal.unregisterAll()
            try await loader.container.commit(removal)
            return (try await asItIs(), nil)
        }
        let below = LayerBelow()
        let transaction = loader.container.makeTransaction(owner: entry.name, rank: entry.rank, wraps: nil, requires: [inner])
        try transaction.register((any ObjectStorage).self) { r in
            below.observe(try r.resolve((any ObjectStorage).self, ownedBy: inner))
        }
        try await loader.container.commit([transaction], verify: true)
        return (plugin, below)
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

    /// `lib<product>.so` next to the test runner (a product of the package under test), or
    /// else in the Plugboard checkout this kit was built from (MemoryStorage, FileStorage,
    /// ... under a layer of another package), in the build of the same configuration first.
    private static func builtProduct(_ product: String) throws(PlugboardError) -> String {
        let candidates = productCandidates(product)
        if let found = candidates.first(where: { access($0, F_OK) == 0 }) { return found }
        let checkout = sdkCheckout
        let configuration = productsFolder.hasSuffix("/release") ? "release" : "debug"
        throw PlugboardError(.pluginFileNotFound, "plugin product \"\(product)\" has not been built",
                             detail: "Expected \(candidates[0]), next to the test runner, or in the Plugboard checkout this test kit comes from: \(candidates.dropFirst().joined(separator: ", ")).",
                             hint: "A product of this package: declare it as a dynamic library product in Package.swift; swift build and swift test build it next to the test runner. A plugin of the Plugboard checkout (MemoryStorage, FileStorage, ...): build it there, (cd \(checkout) && swift build\(configuration == "release" ? " -c release" : "") --product \(product)); do not add it to your test target's dependencies, which would link a second copy of it into the test runner.")
    }

    /// Where ``load(product:name:config:environment:baseDirectory:)`` looks, in order.
    public static func productCandidates(_ product: String) -> [String] {
        let file = "lib\(product).so"
        let configurations = productsFolder.hasSuffix("/release") ? ["release", "debug"] : ["debug", "release"]
        let inCheckout = configurations.map { "\(sdkCheckout)/.build/\($0)/\(file)" }
        return ["\(productsFolder)/\(file)"] + inCheckout.filter { $0 != "\(productsFolder)/\(file)" }
    }

    /// The Plugboard checkout this file was compiled in: a package depending on the kit
    /// by path compiles it there.
    public static var sdkCheckout: String {
        var folder = parent(#filePath)
        for _ in 0..<2 { folder = parent(folder) }  // Sources/PlugboardTesting
        return folder
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
    public internal(set) var name: String
    /// The version the plugin reports.
    public let version: String?
    /// The services it registered, as `plugboard services` names them.
    public let services: [String]
    /// The plugin header read from the file.
    public let header: PluginHeader?
    /// The file's real path and SHA-256.
    public let path: String
    public let sha256: String
    /// What reaches the storage below, for a layer loaded over a provider the kit observes.
    var below: LayerBelow?

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
    ///
    /// The suite holds the storage to the rules of the PlugboardAPI version its header
    /// declares, unless `options` says another (``ObjectStorageConformance/Options/declaredVersion``):
    /// a rule a newer version introduced is a warning when not met. For a layer loaded
    /// over another plugin (``PluginUnderTest/load(_:environment:baseDirectory:)`` with
    /// `wraps`), the suite also sees what reaches the storage below.
    public func objectStorageConformance(options: ObjectStorageConformance.Options = .init()) -> ObjectStorageConformance {
        let container = self.container
        var options = options
        if options.declaredVersion == nil, let header {
            options.declaredVersion = APIVersion(major: header.apiMajor, minor: header.apiMinor, patch: 0)
        }
        return ObjectStorageConformance(makeStorage: { try container.resolve((any ObjectStorage).self) }, options: options,
                                        below: below)
    }

    /// Stops the plugin's managed services, as the host does when it exits.
    public func shutdown() async {
        await container.shutdown()
    }
}
