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
    /// The descriptors the host hands over, from 3 up (``PlugboardIPC/Transports``).
    public static let firstDescriptor: Int32 = 3

    /// Serves one plugin over the wire the host handed over; returns the exit status.
    public static func run(transport kind: TransportKind, descriptors: Int, logger: Logger,
                           environment: [String: String]) async -> Int32 {
        let transport: any FrameTransport
        do throws(IPCError) {
            transport = try Transports.attach(kind, descriptors: (0..<descriptors).map { firstDescriptor + Int32($0) })
        } catch {
            logger.error("worker: could not attach to the host's wire: \(error)")
            return 3
        }
        // The load request is the first frame; nothing else runs until it is read.
        let first = await BlockingWork.run { () -> Result<Frame?, IPCError> in
            do throws(IPCError) { return .success(try transport.receive()) } catch { return .failure(error) }
        }
        guard case .success(let frame?) = first, frame.kind == .load else {
            logger.error("worker: expected a load frame from the host first, found \(first)")
            return 3
        }
        let request: PreflightRequest
        do throws(PlugboardError) {
            request = try PreflightRequest.decode(frame.payload)
        } catch {
            logger.error("worker: \(error.message)")
            return 3
        }
        guard let plugin = request.plugins.first, request.plugins.count == 1 else {
            logger.error("worker: expected one plugin in the load request, found \(request.plugins.count)")
            return 3
        }
        let logger = logger.scrubbing(request.secrets)
        let container = Container(environment: request.environment, logger: logger)
        let (ready, storages) = await load(plugin, request: request, container: container, logger: logger, environment: environment)
        do throws(IPCError) {
            try transport.send(Frame(.ready, payload: ready.encoded()))
        } catch {
            return 3
        }
        guard ready.failure == nil else {
            await container.shutdown()
            return 1
        }
        let server = WorkerServer(transport: transport, storages: storages,
                                  health: { name in try? container.resolve((any HealthChecking).self, name: name) })
        await server.serve()
        // Stopping is plugin code too; the host waits for it with a bound.
        await container.shutdown()
        return 0
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
        let storageType = String(reflecting: (any ObjectStorage).self)
        for info in container.registrations(owner: plugin.name) {
            if info.service == storageType {
                guard let storage = try? container.resolve((any ObjectStorage).self, name: info.name) else { continue }
                storages[info.name] = storage
                services.append(.init(name: info.name, rank: info.rank, healthChecking: storage is any HealthChecking))
            } else {
                refused.append(info.service + (info.name.map { " (name \"\($0)\")" } ?? ""))
            }
        }
        if !refused.isEmpty {
            return (WorkerReady(version: prepared.record.version, services: [], failure: PlugboardError(
                .isolationUnsupportedService, "plugin \"\(plugin.name)\" registers services an isolated plugin cannot provide: \(refused.joined(separator: ", "))",
                detail: "Expected only ObjectStorage providers (with HealthChecking and ManagedService on them), which the host carries to a worker process; found \(refused.joined(separator: ", ")).",
                hint: "Run this plugin in process (\"isolation\": \"in-process\"), or move the other services to a plugin of their own (docs/PLUGIN_GUIDE.md, isolated plugins).")), [:])
        }
        return (WorkerReady(version: prepared.record.version, services: services, failure: nil), storages)
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
    }

    var version: String?
    var services: [Service]
    var failure: PlugboardError?

    func encoded() -> [UInt8] {
        var w = WireWriter(capacity: 128)
        w.optionalString(version)
        w.bool(failure != nil)
        if let failure {
            w.data(WorkerAnswer.failure(failure))
        }
        w.u32(UInt32(services.count))
        for s in services {
            w.optionalString(s.name); w.int(s.rank); w.bool(s.healthChecking)
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
                                    healthChecking: try r.bool("whether a service checks its health")))
        }
        return WorkerReady(version: version, services: services, failure: failure)
    }
}
