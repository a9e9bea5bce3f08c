#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC

/// The child side of an isolated plugin (`plugboard worker`): maps the host's staged copy
/// of one plugin through the same loader, registers it into a container of its own, starts
/// it, tells the host what it can carry (``WorkerReady``), then serves the host's calls until
/// it is told to stop or the host goes away.
///
/// Everything the plugin does happens here: a trap, a segfault, an `exit` or a hang ends or
/// stalls this process, never the host, which replaces it (``IsolatedPlugin``).
public enum WorkerChild {
    /// The descriptors the host hands over, from 3 up: the wire's (``PlugboardIPC/Transports``),
    /// then the pipe where the sandbox reports what it refused.
    public static let firstDescriptor: Int32 = 3

    /// What ``bootstrap(_:)`` did before any thread existed: the wire, the load request,
    /// and the sandbox in place (or why not).
    public struct Bootstrap: Sendable {
        let transport: any FrameTransport
        let load: Result<WorkerLoad, PlugboardError>
        let sandbox: Result<SandboxReport, PlugboardError>?
    }

    /// Set by ``bootstrap(_:)``, taken by ``run(logger:environment:)``.
    private static let bootstrapped = LockedValueBox<Result<Bootstrap, PlugboardError>?>(nil)

    /// The worker's first steps, run by the executable's synchronous entry point before any
    /// thread starts (Landlock confines only the thread that applies it and those it starts
    /// later): the wire attached, the load request read from it, the sandbox applied. For
    /// `plugboard worker --parent-pid PID --transport KIND --descriptors N`; it exits 3 at
    /// once when its parent is gone.
    public static func bootstrap(_ arguments: [String]) {
        func value(_ name: String) -> String? {
            arguments.firstIndex(of: "--" + name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        guard let parent = value("parent-pid").flatMap(Int32.init),
              let kind = value("transport").flatMap(TransportKind.init(rawValue:)),
              let count = value("descriptors").flatMap(Int.init), (1...4).contains(count) else {
            bootstrapped.withLock { $0 = .failure(usage) }
            return
        }
        // Dies with the host; if the host is already gone, there is nobody to serve.
        guard PreflightProbe.attach(parent: parent) else { exit(3) }
        let wire = (0..<count).map { firstDescriptor + Int32($0) }
        let report = firstDescriptor + Int32(count)
        let transport: any FrameTransport
        do throws(IPCError) {
            transport = try Transports.attach(kind, descriptors: wire)
        } catch {
            bootstrapped.withLock { $0 = .failure(PlugboardError(.isolationWorkerFailed, "the worker could not attach to the host's wire: \(error)")) }
            return
        }
        let load: Result<WorkerLoad, PlugboardError>
        switch Result(catching: { () throws(IPCError) -> Frame? in try transport.receive() }) {
        case .success(let frame?) where frame.kind == .load:
            load = Result { () throws(PlugboardError) -> WorkerLoad in try WorkerLoad.decode(frame.payload) }
        case .success(let frame):
            load = .failure(PlugboardError(.isolationProtocolViolation,
                "the worker expected a load frame first, found \(frame.map { "a \($0.kind) frame" } ?? "the wire's end")"))
        case .failure(let error):
            load = .failure(PlugboardError(.isolationProtocolViolation, "the worker could not read its load request: \(error)"))
        }
        var sandbox: Result<SandboxReport, PlugboardError>?
        if case .success(let request) = load {
            var policy = request.sandbox
            // A sanitizer's shadow memory is writable data by the terabyte: no limit on
            // it could hold, so under one the memory limit alone is left out.
            if Sandbox.underSanitizer { policy.memoryLimitBytes = .max }
            sandbox = Result { () throws(PlugboardError) -> SandboxReport in
                // What the transport still holds of the wire (the ring has closed its memfd
                // once mapped) stays open; nothing else does.
                try Sandbox.apply(policy, reportDescriptor: report, keepDescriptors: wire.filter { fcntl($0, F_GETFD) >= 0 })
            }
        }
        bootstrapped.withLock { $0 = .success(Bootstrap(transport: transport, load: load, sandbox: sandbox)) }
    }

    private static var usage: PlugboardError {
        PlugboardError(.usage, "plugboard worker needs --parent-pid, --transport socket|ring and --descriptors 1-4",
                       detail: "It is an internal command: the host runs it with its wire on descriptors 3 and up.",
                       hint: "Set \"isolation\": \"process\" on a plugin's manifest entry to run it in a worker.")
    }

    /// Serves one plugin over the wire ``bootstrap(_:)`` attached; returns the exit status.
    public static func run(logger: Logger, environment: [String: String]) async throws(PlugboardError) -> Int32 {
        guard let bootstrapped = bootstrapped.withLock({ $0 }) else { throw usage }
        let boot = try bootstrapped.get()
        let transport = boot.transport
        let request: PreflightRequest
        let below: [String?]
        switch boot.load {
        case .success(let load): (request, below) = (load.request, load.below)
        case .failure(let error):
            logger.error("worker: \(error.message)")
            return 3
        }
        // Nothing of the plugin is mapped unless its sandbox is in place.
        if case .failure(let error)? = boot.sandbox {
            try? transport.send(Frame(.ready, payload: WorkerReady(version: nil, services: [], failure: error).encoded()))
            return 1
        }
        guard let plugin = request.plugins.first, request.plugins.count == 1 else {
            logger.error("worker: expected one plugin in the load request, found \(request.plugins.count)")
            return 3
        }
        let logger = logger.scrubbing(request.secrets)
        if case .success(let report)? = boot.sandbox, let reason = report.landlockUnavailableReason {
            logger.warning("worker: file access is not confined: \(reason)", metadata: ["plugin": .string(plugin.name)])
        }
        let container = Container(environment: request.environment, logger: logger)
        // The wire is read from before the plugin loads: a layer's start may already call
        // the storage it wraps (QuotaStorage counts what is there), which the host serves.
        let host = plugin.wraps == nil ? nil : WorkerConnection(transport: transport, origin: StreamOrigin.worker) { _ in }
        let served = LockedValueBox<[String?: any ObjectStorage]>([:])
        let server = WorkerServer(transport: transport, storage: { name throws(PlugboardError) in
            guard let storage = served.withLock({ $0[name] }) else {
                throw PlugboardError(.notRegistered, "the isolated plugin has no ObjectStorage named \(name.map { "\"\($0)\"" } ?? "(unnamed)")")
            }
            return storage
        }, health: { name in try? container.resolve((any HealthChecking).self, name: name) }, client: host)
        guard server.start() else {
            logger.error("worker: could not start the thread that reads the host's wire")
            return 3
        }
        let ready: WorkerReady, storages: [String?: any ObjectStorage]
        do throws(PlugboardError) {
            if let host, let wrapped = plugin.wraps { try await registerBelow(below, of: wrapped, connection: host, in: container) }
            (ready, storages) = await load(plugin, request: request, container: container, logger: logger, environment: environment)
        } catch {
            (ready, storages) = (WorkerReady(version: nil, services: [], failure: error), [:])
        }
        served.withLock { $0 = storages }
        do throws(IPCError) {
            try transport.send(Frame(.ready, payload: ready.encoded()))
        } catch {
            return 3
        }
        guard ready.failure == nil else {
            await container.shutdown()
            return 1
        }
        await server.serve()
        // Stopping is plugin code too; the host waits for it with a bound.
        await container.shutdown()
        return 0
    }

    /// For a layer: the storages its plugin wraps, as proxies that call the host, owned by
    /// the wrapped plugin as the real providers are in the host, so that the layer's
    /// `registerLayer` finds each below it.
    static func registerBelow(_ names: [String?], of wrapped: String, connection: WorkerConnection,
                              in container: Container) async throws(PlugboardError) {
        let transaction = container.makeTransaction(owner: wrapped, rank: 0, wraps: nil, requires: nil)
        for name in names {
            try transaction.register((any ObjectStorage).self, name: name, rank: 0,
                                     instance: HostStorage(connection: connection, service: name, wrapped: wrapped))
        }
        try await container.commit([transaction], verify: false)
    }

    /// Loads and starts `plugin`, and says what the host may register for it.
    static func load(_ plugin: PreflightRequest.Plugin, request: PreflightRequest, container: Container, logger: Logger,
                     environment: [String: String]) async -> (WorkerReady, [String?: any ObjectStorage]) {
        let loader: PluginLoader
        do throws(PlugboardError) {
            loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: request.cacheDirectory, logger: logger,
                                                                                 failureLogLevel: .info, processEnvironment: environment,
                                                                                 checkOnly: request.checkOnly))
        } catch {
            return (WorkerReady(version: nil, services: [], failure: error), [:])
        }
        let staged = StagedPlugin(name: plugin.name, stagedCopy: plugin.path, sha256: plugin.sha256)
        var prepared = loader.prepare(staged, config: plugin.config, rank: plugin.rank, wraps: plugin.wraps,
                                      requires: plugin.requires, secrets: request.secrets)
        guard let transaction = prepared.transaction else {
            return (WorkerReady(version: prepared.record.version, services: [], failure: prepared.record.error), [:])
        }
        do throws(PlugboardError) {
            try await container.commit([transaction], verify: true)
            loader.activated(&prepared.record)
        } catch {
            return (WorkerReady(version: prepared.record.version, services: [], failure: request.secrets.scrub(error)), [:])
        }
        var services: [WorkerReady.Service] = []
        var storages: [String?: any ObjectStorage] = [:]
        var refused: [String] = []
        var mappings: [WorkerReady.ErrorMapping] = []
        let storageType = String(reflecting: (any ObjectStorage).self)
        let mappingType = String(reflecting: PlugboardError.Mapping.self)
        for info in container.registrations(owner: plugin.name) {
            if info.service == mappingType, let code = info.name,
               let mapping = try? container.resolve(PlugboardError.Mapping.self, name: code) {
                // Data, not code: the host registers the same table for its proxy's errors.
                mappings.append(.init(code: code, status: mapping.status, s3Code: mapping.s3Code))
            } else if info.service == storageType {
                guard let storage = try? container.resolve((any ObjectStorage).self, name: info.name) else { continue }
                storages[info.name] = storage
                services.append(.init(name: info.name, rank: info.rank, healthChecking: storage is any HealthChecking,
                                      layer: info.wraps != nil))
            } else {
                refused.append(info.service + (info.name.map { " (name \"\($0)\")" } ?? ""))
            }
        }
        if !refused.isEmpty {
            return (WorkerReady(version: prepared.record.version, services: [], failure: PlugboardError(
                .isolationUnsupportedService, "plugin \"\(plugin.name)\" registers services an isolated plugin cannot provide: \(refused.joined(separator: ", "))",
                detail: "Expected only ObjectStorage providers (with HealthChecking and ManagedService on them) and error mappings, which the host carries to a worker process; found \(refused.joined(separator: ", ")).",
                hint: "Run this plugin in process (\"isolation\": \"in-process\"), or move the other services to a plugin of their own (docs/PLUGIN_GUIDE.md, isolated plugins).")), [:])
        }
        return (WorkerReady(version: prepared.record.version, services: services, failure: nil, mappings: mappings), storages)
    }
}

/// The worker's first frame: the plugin's version and the storages it registered, or
/// why it could not start.
struct WorkerReady: Sendable {
    struct Service: Sendable, Equatable {
        var name: String?
        var rank: Int
        /// Whether the storage also adopts `HealthChecking`.
        var healthChecking: Bool
        /// Whether it is a layer over the storage of the same name its plugin wraps: the
        /// host registers its proxy as a layer too, so that it stands where the layer does.
        var layer = false
    }

    /// A `mapErrors` entry of the plugin's (``PluginRegistrar/mapErrors(_:)``).
    struct ErrorMapping: Sendable, Equatable {
        var code: String
        var status: Int
        var s3Code: String
    }

    var version: String?
    var services: [Service]
    var failure: PlugboardError?
    /// How the plugin's own error codes answer over HTTP and S3.
    var mappings: [ErrorMapping] = []

    func encoded() -> [UInt8] {
        var w = WireWriter(capacity: 128)
        w.optionalString(version)
        w.bool(failure != nil)
        if let failure {
            w.data(WorkerAnswer.failure(failure))
        }
        w.u32(UInt32(services.count))
        for s in services {
            w.optionalString(s.name); w.int(s.rank); w.bool(s.healthChecking); w.bool(s.layer)
        }
        w.u32(UInt32(mappings.count))
        for m in mappings {
            w.string(m.code); w.int(m.status); w.string(m.s3Code)
        }
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(IPCError) -> WorkerReady {
        var r = WireReader(bytes)
        let version = try r.optionalString("the plugin's version")
        var failure: PlugboardError?
        if try r.bool("whether the load failed") {
            let error = try WorkerAnswer.failure(try r.data("the load's error"))
            failure = (error as? PlugboardError) ?? PlugboardError(.loadFailed, "the worker's load was cancelled")
        }
        let count = Int(try r.u32("the number of services"))
        guard count <= 1024 else { throw .malformed("expected at most 1024 services, found \(count)") }
        var services: [Service] = []
        for _ in 0..<count {
            services.append(Service(name: try r.optionalString("a service's name"), rank: try r.int("a service's rank"),
                                    healthChecking: try r.bool("whether a service checks its health"),
                                    layer: try r.bool("whether a service is a layer")))
        }
        let mappingCount = Int(try r.u32("the number of error mappings"))
        guard mappingCount <= 1024 else { throw .malformed("expected at most 1024 error mappings, found \(mappingCount)") }
        var mappings: [ErrorMapping] = []
        for _ in 0..<mappingCount {
            mappings.append(ErrorMapping(code: try r.string("an error mapping's code"), status: try r.int("an error mapping's status"),
                                         s3Code: try r.string("an error mapping's S3 code")))
        }
        return WorkerReady(version: version, services: services, failure: failure, mappings: mappings)
    }
}
