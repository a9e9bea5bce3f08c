#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import CPlugboardSystem
import PlugboardConcurrency

/// Loads plugin files into a container, refusing what it can before `dlopen`.
///
/// For one plugin, in this order (each refusal names what was expected, what was found,
/// and what to do):
/// 1. the file: path, regular file, permissions, the sha256 pin (a remote source's file is
///    its copy in the cache, fetched first by ``fetch(_:sha256:plugin:)``), the signature;
/// 2. before `dlopen`: the ELF header, the plugin header, the toolchain;
/// 3. a content-addressed copy in the cache, with the libraries it needs beside it;
///    `dlopen` of that copy;
/// 4. the entry point, the handshake (versions compiled into the plugin, one shared
///    PlugboardAPI);
/// 5. registration into one transaction, whose managed services start before it is
///    published; on any failure nothing is published.
///
/// A failure marks the plugin `rejected` (steps 1-2) or `failed` (3-5); it never takes
/// the host or other plugins down. No image is ever unloaded (docs/ARCHITECTURE.md, fact 2).
public final class PluginLoader: Sendable {
    /// How the loader is set up.
    public struct Configuration: Sendable {
        /// Where content-addressed copies go; created with mode 0700.
        public var cacheDirectory: String
        /// Where plugins log, and the loader too; each plugin's logger adds `plugin=<name>`.
        public var logger: Logger
        /// The level of the line logged when a plugin fails or is rejected: `error` where
        /// that line is the report (serve), lower where the caller prints the failure
        /// itself (plugboard plugins' table), so that it is not told twice.
        public var failureLogLevel: Logger.Level
        /// The process environment each plugin is given (``PluginRegistrar/processEnvironment``):
        /// the host's, captured once at start; empty unless the caller passes it.
        public var processEnvironment: [String: String]
        /// `plugboard check`: each plugin is told it is loaded only to be checked
        /// (``PluginRegistrar/checkOnly``), so that its start creates nothing.
        public var checkOnly: Bool
        /// The manifest the plugins come from, as given: what the hints of its plugins'
        /// refusals name (`--manifest other.json`); nil where there is none (`inspect`).
        public var manifestPath: String?
        /// How to start an isolated plugin's worker child; nil where none may be started
        /// (a worker's own loader, `inspect`): an isolated plugin is then refused.
        public var workerLauncher: WorkerLauncher?

        public init(cacheDirectory: String, logger: Logger = .disabled, failureLogLevel: Logger.Level = .error,
                    processEnvironment: [String: String] = [:], checkOnly: Bool = false, manifestPath: String? = nil,
                    workerLauncher: WorkerLauncher? = nil) {
            self.workerLauncher = workerLauncher
            self.cacheDirectory = cacheDirectory
            self.logger = logger
            self.failureLogLevel = failureLogLevel
            self.processEnvironment = processEnvironment
            self.checkOnly = checkOnly
            self.manifestPath = manifestPath
        }
    }

    /// What to load.
    public struct Request: Sendable {
        public var name: String
        public var path: String
        public var sha256: String?
        public var config: PluginConfig
        public var rank: Int
        /// The plugin whose providers its layers wrap (the manifest's `wraps`), or nil.
        public var wraps: String?
        /// The plugins its manifest entry requires (``PlugboardAPI/Transaction/requires``),
        /// or nil for a load no manifest describes.
        public var requires: [String]?
        /// The manifest's secrets, hidden in every text the plugin hands back (its errors,
        /// its log lines, its version) before the host records, logs or shows it.
        public var secrets: SecretScrubber

        public init(name: String, path: String, sha256: String? = nil, config: PluginConfig? = nil, rank: Int = 0,
                    secrets: SecretScrubber = .none, wraps: String? = nil, requires: [String]? = nil) {
            self.name = name
            self.wraps = wraps
            self.requires = requires
            self.path = path
            self.sha256 = sha256
            self.config = config ?? PluginConfig(plugin: name)
            self.rank = rank
            self.secrets = secrets
        }
    }

    public let container: Container
    public let configuration: Configuration
    let cache: PluginCache
    let logger: Logger
    /// Told of what happens to the isolated plugins this loader started, as the host's
    /// events: (plugin, `plugin_crashed` or `plugin_sandbox_refused`, message); until set,
    /// it goes to the log alone.
    public let crashObserver = LockedValueBox<(@Sendable (String, String, String) -> Void)?>(nil)

    typealias EntryPoint = @convention(c) (Int32, UnsafeMutableRawPointer?) -> Int32

    /// - Throws: `loader.cache_failed` if the cache folder cannot be created,
    ///   `loader.cache_untrusted` if another user could change it.
    public init(container: Container, configuration: Configuration) throws(PlugboardError) {
        self.container = container
        self.configuration = configuration
        self.cache = try PluginCache(directory: configuration.cacheDirectory)
        self.logger = configuration.logger.with("component", "loader")
    }

    /// Loads one plugin and reports how it went; never throws.
    public func load(_ request: Request) async -> PluginRecord {
        // Reading, hashing, copying and dlopen block: off the cooperative pool.
        await commit(await BlockingWork.run { [self] in prepare(request) }, secrets: request.secrets)
    }

    /// Loads one plugin already staged (its file is not read again); never throws.
    /// `checked`: an isolated plugin's supervisor whose first worker its preflight started
    /// (``prepareIsolated(_:config:rank:wraps:requires:secrets:settings:checked:)``).
    public func load(_ staged: StagedPlugin, config: PluginConfig, rank: Int, wraps: String? = nil, requires: [String]? = nil,
                     secrets: SecretScrubber, isolation: PluginIsolation = .inProcess,
                     checked: IsolatedPlugin? = nil) async -> PluginRecord {
        if let settings = isolation.worker {
            return await commit(await prepareIsolated(staged, config: config, rank: rank, wraps: wraps, requires: requires, secrets: secrets,
                                                      settings: settings, checked: checked),
                                secrets: secrets)
        }
        return await commit(await BlockingWork.run { [self] in
                         prepare(staged, config: config, rank: rank, wraps: wraps, requires: requires, secrets: secrets)
                     },
                     secrets: secrets)
    }

    private func commit(_ prepared: Prepared, secrets: SecretScrubber) async -> PluginRecord {
        var prepared = prepared
        guard let transaction = prepared.transaction else { return prepared.record }
        do throws(PlugboardError) {
            // Every singleton built and every health check run now: a plugin whose services
            // cannot work is failed at load, not at its first request.
            try await container.commit([transaction], verify: true)
            activated(&prepared.record)
        } catch {
            // A singleton's factory, a start or a health check is plugin code.
            failed(&prepared.record, secrets.scrub(error))
            await prepared.record.worker?.stop()
        }
        return prepared.record
    }

    /// A plugin mapped and registered into a transaction that nobody has committed yet.
    public struct Prepared: Sendable {
        /// `failed` or `rejected` with its error when ``transaction`` is nil; else still
        /// `failed` until ``PluginLoader/activated(_:)`` marks the commit.
        public var record: PluginRecord
        /// The plugin's registrations, to commit (alone, or with a whole hot swap).
        public var transaction: Transaction?
    }

    /// Every step of ``load(_:)`` but the commit: a hot swap commits the transactions of
    /// all the plugins it changes, and the removals of the old ones, as one generation.
    public func prepare(_ request: Request) -> Prepared {
        let staging = stage(path: request.path, name: request.name, pin: request.sha256)
        switch staging.result {
        case .success(let staged):
            return prepare(staged, config: request.config, rank: request.rank, wraps: request.wraps, requires: request.requires,
                           secrets: request.secrets)
        case .failure:
            return Prepared(record: refused(request.name, pin: request.sha256, staging), transaction: nil)
        }
    }

    /// Maps a staged plugin's copy and registers it into a transaction: the file is not
    /// read again, so what is mapped is what staging checked. `wraps` is the manifest's:
    /// the plugin whose providers its layers wrap; `requires` the entry's requirements
    /// (with what it wraps), or nil where no manifest describes the plugin.
    public func prepare(_ staged: StagedPlugin, config: PluginConfig, rank: Int, wraps: String? = nil, requires: [String]? = nil,
                        secrets: SecretScrubber) -> Prepared {
        var record = PluginRecord(name: staged.name, state: .failed, path: staged.inspection.path, sha256: staged.sha256,
                                  header: staged.inspection.header)
        record.signedBy = staged.signer
        let mapped: (library: DynamicLibrary, entry: EntryPoint)
        do {
            mapped = try open(staged.loadPath, plugin: staged.name)
            MappedImages.shared.record(path: staged.loadPath, sha256: staged.sha256, bytes: staged.inspection.size, plugin: staged.name)
            // A crash in this image later names the plugin, not only a cache file.
            _ = plugboard_crash_register_library(unsafeBitCast(mapped.entry, to: UnsafeRawPointer.self), staged.name)
        } catch {
            failed(&record, error)
            return Prepared(record: record, transaction: nil)
        }
        do {
            try handshake(mapped.entry, plugin: staged.name)
            let registrar = PluginRegistrar(pluginName: staged.name, container: container, config: config,
                                            logger: configuration.logger.scrubbing(secrets), rank: rank,
                                            processEnvironment: configuration.processEnvironment,
                                            checkOnly: configuration.checkOnly, wraps: wraps, requires: requires)
            let call = PluginCall(registrar: registrar)
            let status = mapped.entry(PluginEntry.Op.register, Unmanaged.passUnretained(call).toOpaque())
            record.version = secrets.scrub(call.version)
            guard status == PluginEntry.Status.ok else {
                throw call.failure ?? PlugboardError(.protocolViolation,
                    "plugin \"\(staged.name)\" answered register with status \(status)",
                    hint: "Its entry point must call PluginEntry.run(op, arg, YourPlugin.self).")
            }
            return Prepared(record: record, transaction: registrar.transaction)
        } catch let error as PlugboardError {
            failed(&record, secrets.scrub(error))
        } catch {
            failed(&record, secrets.scrub(PlugboardError(.registrationFailed, "plugin \"\(staged.name)\" failed: \(error)")))
        }
        return Prepared(record: record, transaction: nil)
    }

    /// The record of a plugin that staging refused: `rejected` with the error, logged as
    /// a load failure is, unless it could not even be located (its record says so, and
    /// nothing was tried).
    func refused(_ name: String, pin: String?, _ staging: StagingResult?) -> PluginRecord {
        let error = staging?.error ?? PlugboardError(.loadFailed, "plugin \"\(name)\" was not staged")
        guard let path = staging?.path else { return PluginRecord(name: name, state: .rejected, error: error) }
        var record = PluginRecord(name: name, state: .rejected, path: path, sha256: pin)
        failed(&record, error)
        return record
    }

    /// Marks a prepared plugin whose transaction was committed.
    public func activated(_ record: inout PluginRecord) {
        record.state = .active
        record.error = nil
        record.generation = container.generation
        record.services = container.registrations(owner: record.name).map(\.service)
        logger.info("loaded plugin", metadata: ["plugin": .string(record.name),
                                                 "version": .string(record.version ?? "?"),
                                                 "sha256": .string(String(record.sha256?.prefix(12) ?? ""))])
    }

    /// Records and logs a failure; a plugin refused before `dlopen` stays `rejected`.
    public func failed(_ record: inout PluginRecord, _ error: PlugboardError) {
        if record.state == .active { record.state = .failed }
        record.error = error
        // The whole story in one line: message, detail and hint.
        var metadata: Logger.Metadata = ["plugin": .string(record.name), "code": .string(error.code.rawValue),
                                         "error": .string(error.message)]
        if let detail = error.detail { metadata["detail"] = .string(detail) }
        if let hint = error.hint { metadata["hint"] = .string(hint) }
        logger.log(configuration.failureLogLevel, "\(record.state == .rejected ? "rejected" : "failed to load") plugin", metadata: metadata)
    }

    /// Removes cached copies no running host maps, least recently used first, down to
    /// `keep`; returns the names removed.
    public func pruneCache(keeping keep: Int) -> [String] {
        cache.prune(keeping: keep)
    }

    /// Reads, hashes and checks a plugin file (steps 1 and 2) and writes its
    /// content-addressed copy, with the libraries it needs from beside it, to the cache,
    /// without mapping anything: the one read and the one hash of the file, whatever
    /// runs next (a preflight child, the host's `dlopen`, or only a reload's comparison).
    ///
    /// `signing` is what the manifest asks of the plugin's signature, checked right after
    /// the pin: bytes nobody trusted never reach the ELF parser, the cache or `dlopen`.
    ///
    /// `previous` is the same plugin as the running host staged it: when the file still
    /// holds those bytes at that path, its checks and its cache copy stand, and only the
    /// pin and the signature (which the manifest, its trust section included, may have
    /// changed) are checked again.
    public func stage(path: String, name: String, pin: String?, signing: PluginSigning = .none,
                      previous: StagedPlugin? = nil) -> StagingResult {
        let file: PluginFile
        let sha: String
        do throws(PlugboardError) {
            file = try PluginFile.read(path, plugin: name, manifest: configuration.manifestPath)
            sha = try Digest.sha256Hex(file.bytes)
        } catch {
            return StagingResult(path: path, sha256: nil, result: .failure(error))
        }
        do throws(PlugboardError) {
            try PluginInspection.checkPin(pin, sha256: sha, name: name, path: file.path, manifest: configuration.manifestPath)
            let signer = try signing.verify(name: name, sha256: sha, path: file.path)
            if var reused = previous, reused.sha256 == sha, reused.inspection.path == file.path {
                reused.signer = signer
                return StagingResult(path: path, sha256: sha, result: .success(reused))
            }
            let inspection = try PluginInspection.check(file, sha256: sha, name: name, pin: nil, requireHeader: true)
            let loadPath = try store(inspection, bytes: file.bytes, plugin: name, requested: path)
            return StagingResult(path: path, sha256: sha, result: .success(StagedPlugin(name: name, inspection: inspection, loadPath: loadPath,
                                                                                        signer: signer)))
        } catch {
            return StagingResult(path: path, sha256: sha, result: .failure(error))
        }
    }

    /// What a plugin declares (name, version, services) without registering anything:
    /// every check, `dlopen`, the handshake, then `describe`.
    public func describe(path: String, name: String) throws(PlugboardError) -> (PluginInspection, PluginCall) {
        let staged = try stage(path: path, name: name, pin: nil).result.get()
        let mapped = try open(staged.loadPath, plugin: name)
        try handshake(mapped.entry, plugin: name)
        let call = PluginCall(registrar: nil)
        _ = mapped.entry(PluginEntry.Op.describe, Unmanaged.passUnretained(call).toOpaque())
        return (staged.inspection, call)
    }

    // MARK: - Steps

    /// Copies the plugin, and the libraries it needs from beside it, into the cache;
    /// returns the path to `dlopen`.
    ///
    /// `requested` is the path as given. Its folder is where siblings are looked for when
    /// the real file's folder has none: a preflight child is given the staged
    /// `<cache>/<sha256>.d/libX.so`, whose real file sits in the cache among copies named
    /// by digest, and only the `.d` folder still names the contract library beside it.
    private func store(_ inspection: PluginInspection, bytes: [UInt8], plugin: String, requested: String) throws(PlugboardError) -> String {
        let entry = try cache.store(bytes, sha256: inspection.sha256)
        var links: [(name: String, target: String)] = []
        var seen = Set<String>()
        try collectSiblings(of: inspection, plugin: plugin, besides: PluginFile.parentFolder(requested),
                            into: &links, seen: &seen)
        guard !links.isEmpty else { return entry }
        let name = PluginFile.fileName(inspection.path)
        let folder = try cache.linkFolder(sha256: inspection.sha256,
                                          links: [(name, "../\(inspection.sha256).so")] + links)
        return "\(folder)/\(name)"
    }

    /// The libraries `inspection` needs that are not in the process yet and lie beside
    /// the original file, checked and cached like the plugin, recursively. A library the
    /// process already has under that name (libPlugboardAPI.so, the Swift runtime, a
    /// contract another plugin brought) is never loaded a second time, even if the
    /// plugin's folder has its own build of it.
    private func collectSiblings(of inspection: PluginInspection, plugin: String, besides requestedFolder: String,
                                 into links: inout [(name: String, target: String)],
                                 seen: inout Set<String>) throws(PlugboardError) {
        let folder = PluginFile.parentFolder(inspection.path)
        for needed in inspection.neededLibraries where !seen.contains(needed) {
            seen.insert(needed)
            // Only a library beside the plugin is a sibling; the others (the Swift runtime,
            // libc) are left to the dynamic loader's search. The file test comes first: it
            // is one stat, where asking the loader walks every loaded image by name.
            let candidates = ["\(folder)/\(needed)", "\(requestedFolder)/\(needed)"]
            guard let candidate = candidates.first(where: { access($0, F_OK) == 0 }),
                  !DynamicLibrary.isLoaded(needed) else { continue }
            let file = try PluginFile.read(candidate, plugin: plugin)
            let sibling = try PluginInspection.sibling(file, sha256: try Digest.sha256Hex(file.bytes), of: plugin)
            _ = try cache.store(file.bytes, sha256: sibling.sha256)
            links.append((needed, "../\(sibling.sha256).so"))
            try collectSiblings(of: sibling, plugin: plugin, besides: requestedFolder, into: &links, seen: &seen)
        }
    }

    private func open(_ path: String, plugin: String) throws(PlugboardError) -> (library: DynamicLibrary, entry: EntryPoint) {
        let library: DynamicLibrary
        switch DynamicLibrary.open(path) {
        case .success(let l): library = l
        case .failure(let e):
            throw PlugboardError(.dlopenFailed, "could not load library of plugin \"\(plugin)\": \(e.text)",
                hint: "A library it needs may be missing; run ldd on the plugin file to see which.")
        }
        guard let symbol = library.symbol(PluginEntry.symbolName) else {
            throw PlugboardError(.entryPointMissing, "could not find function \"\(PluginEntry.symbolName)\" in plugin \"\(plugin)\"",
                detail: "The shared object exports no \(PluginEntry.symbolName) symbol.",
                hint: "Declare it with @c(plugboard_plugin_entry) calling PluginEntry.run (see docs/PLUGIN_HEADER.md).")
        }
        return (library, unsafeBitCast(symbol, to: EntryPoint.self))
    }

    private func handshake(_ entry: EntryPoint, plugin: String) throws(PlugboardError) {
        var words = [UInt64](repeating: 0, count: PluginHandshake.wordCount)
        let status = words.withUnsafeMutableBytes { entry(PluginEntry.Op.handshake, $0.baseAddress) }
        guard status == PluginEntry.Status.ok else {
            throw PlugboardError(.protocolViolation, "plugin \"\(plugin)\" refused the handshake with status \(status)",
                hint: "Its entry point must call PluginEntry.run(op, arg, YourPlugin.self).")
        }
        try PluginHandshake(words: words, plugin: plugin).check(plugin: plugin)
    }
}
