import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC

/// What an isolated layer wraps in the host: for each name, the provider its workers'
/// calls to the storage below are served from (``HostStorage`` on their side).
///
/// Before the layer's commit, while its worker starts, that is the provider the wrapped
/// plugin has in the running generation; the layer's registration, when the commit builds
/// it, sets the one of the generation being built (at a hot swap of the wrapped plugin, its
/// new build), as an in-process layer is handed it. A retired layer keeps the providers of
/// its own generation and drains on them.
final class WrappedStorages: Sendable {
    /// The wrapped plugin's name.
    let owner: String
    private let providers = LockedValueBox<[String?: any ObjectStorage]>([:])

    init(owner: String) {
        self.owner = owner
    }

    func set(_ storage: any ObjectStorage, name: String?) {
        providers.withLock { $0[name] = storage }
    }

    func storage(_ name: String?) throws(PlugboardError) -> any ObjectStorage {
        if let storage = providers.withLock({ $0[name] }) { return storage }
        let label = "ObjectStorage" + (name.map { " (name \"\($0)\")" } ?? "")
        throw PlugboardError(.storageUnavailable, "the \(label) of \"\(owner)\" is not in the host yet",
            detail: "An isolated layer's worker called the storage it wraps before the host had it: \"\(owner)\" is loaded by the same reload as its layer, and is published only with it.",
            hint: "Load \"\(owner)\" first (a reload of its own), then the layer that wraps it; or run the layer in process.")
    }

    /// What serves one worker's calls on its wire.
    func server(on transport: any FrameTransport) -> WorkerServer {
        WorkerServer(transport: transport, storage: { [self] name throws(PlugboardError) in try storage(name) },
                     health: { [self] name in (try? storage(name)) as? any HealthChecking }, bothWays: true)
    }
}
