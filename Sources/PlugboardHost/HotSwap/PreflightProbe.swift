#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardBytes
import CPlugboardSystem

/// The child side of a preflight (`plugboard preflight`): loads the requested plugins
/// into a scratch container, exactly as the host would, and reports each one.
///
/// For every plugin, in order: `dlopen` of the copy the host staged (``StagedPlugin``: the
/// host read, hashed and checked it; the cache only its owner can change keeps it so),
/// the handshake, registration, then a verifying
/// commit: every singleton it registers is built, its managed services start, and every
/// new service that adopts ``HealthChecking`` is checked. At the end the scratch container
/// shuts down, which stops the managed services. A plugin whose requirement failed is not
/// run. The child may crash, hang or exit in plugin code: that is what it is for.
public enum PreflightProbe {
    /// Descriptor 3 carries the request, descriptor 4 the report.
    public static let requestDescriptor: Int32 = 3
    public static let reportDescriptor: Int32 = 4

    /// Sets up the child: dies with the host (`PR_SET_PDEATHSIG`), and stops at once if
    /// the host already died between the spawn and here. Returns false in that case.
    public static func attach(parent: Int32) -> Bool {
        _ = plugboard_set_parent_death_signal(SIGKILL)
        return getppid() == parent
    }

    /// Reads the request, runs it, writes the report; returns the exit status.
    /// `environment` is the child's own, captured once: the host's, which it was given,
    /// and which its plugins see as the host's would.
    public static func run(logger: Logger, environment: [String: String]) async -> Int32 {
        guard let bytes = readAll(requestDescriptor) else { return 3 }
        let request: PreflightRequest
        do throws(PlugboardError) {
            request = try PreflightRequest.decode(bytes)
        } catch {
            logger.error("preflight: \(error.message)")
            return 3
        }
        let records = await check(request, logger: logger, environment: environment) { write(reportDescriptor, $0) }
        return records.allSatisfy { $0.state == .active } ? 0 : 1
    }

    /// Loads `request`'s plugins into a scratch container and reports each through `emit`.
    static func check(_ request: PreflightRequest, logger: Logger, environment: [String: String] = [:],
                      emit: ([UInt8]) -> Void) async -> [PluginRecord] {
        let logger = logger.scrubbing(request.secrets)
        let container = Container(environment: request.environment, logger: logger)
        let loader: PluginLoader
        do throws(PlugboardError) {
            // A failure is reported by the parent (check's table, serve's reload outcome), from
            // the record this child sends: its own log line would tell it a second time.
            loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: request.cacheDirectory, logger: logger,
                                                                                 failureLogLevel: .info,
                                                                                 processEnvironment: environment,
                                                                                 checkOnly: request.checkOnly))
        } catch {
            let records = request.plugins.map { PluginRecord(name: $0.name, state: .failed, error: error) }
            for r in records { emit(PreflightWire.record(r)) }
            return records
        }
        var records: [PluginRecord] = []
        var active = Set<String>()
        let walk = DependencyWalk<PreflightRequest.Plugin>(name: \.name, requires: \.requires)
        await walk.run(request.plugins) { plugin in
            emit(PreflightWire.begin(plugin.name))
            // The host's staged copy, mapped as it is: the host read, hashed and checked it.
            let staged = StagedPlugin(name: plugin.name, stagedCopy: plugin.path, sha256: plugin.sha256)
            var prepared = loader.prepare(staged, config: plugin.config, rank: plugin.rank, wraps: plugin.wraps,
                                          requires: plugin.requires, secrets: request.secrets)
            if let tx = prepared.transaction {
                do throws(PlugboardError) {
                    try await container.commit([tx], verify: true)
                    loader.activated(&prepared.record)
                    active.insert(plugin.name)
                } catch {
                    loader.failed(&prepared.record, request.secrets.scrub(error))
                }
            }
            emit(PreflightWire.record(prepared.record))
            records.append(prepared.record)
            return prepared.record.state == .active
        } blocked: { plugin, blocker in
            let record = PluginRecord(name: plugin.name, state: .failed, error: requirementFailed(plugin.name, blocker: blocker))
            emit(PreflightWire.record(record))
            records.append(record)
        }
        // Stopping is plugin code too: a stop that crashes or hangs is caught here.
        emit(PreflightWire.stopping(request.plugins.map(\.name).filter(active.contains)))
        await container.shutdown()
        emit(PreflightWire.stopped)
        return records
    }

    /// The verdict of a plugin whose requirement `blocker` did not pass its preflight.
    static func requirementFailed(_ name: String, blocker: String) -> PlugboardError {
        PlugboardError(.requirementUnavailable, "plugin \"\(name)\" requires plugin \"\(blocker)\", which did not pass its preflight",
                       hint: "Fix \"\(blocker)\" first; its own error says why it failed.")
    }

    static func readAll(_ fd: Int32) -> [UInt8]? {
        try? DescriptorIO.readToEnd(fd)
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR; gives up on any
    /// other error (the reader went away).
    public static func write(_ fd: Int32, _ bytes: [UInt8]) {
        try? DescriptorIO.writeAll(fd, bytes)
    }
}
