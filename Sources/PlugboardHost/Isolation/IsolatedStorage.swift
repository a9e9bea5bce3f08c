import PlugboardAPI
import PlugboardIPC

/// The host's stand-in for an isolated plugin's `ObjectStorage`: every call goes over the
/// wire to the plugin's worker (``IsolatedPlugin``).
///
/// A read (head, get before its body has begun, list, health check) whose worker died
/// beside other calls is sent once more to the next worker, transparently; one that was
/// the worker's only call is likely what ended it, and fails like a put or delete in
/// flight, which fails
/// with `storage.unavailable` (503): it may or may not have been stored, and a streamed put
/// that had not ended stored nothing. While no worker is ready, every call is
/// `storage.unavailable`.
///
/// Its calls cross as ``StorageOverWire`` says.
final class IsolatedStorage: StorageOverWire, HealthChecking, ManagedService {
    let plugin: IsolatedPlugin
    /// The registration's name in the worker's container (nil: unnamed).
    let service: String?
    /// Whether the plugin's storage checks its health itself.
    let checksHealth: Bool

    init(plugin: IsolatedPlugin, service: String?, checksHealth: Bool) {
        self.plugin = plugin
        self.service = service
        self.checksHealth = checksHealth
    }

    /// Sends `call` to the worker; a read whose worker died goes once to the next one.
    func perform(_ call: WorkerCall, body: ObjectBody?) async throws -> WorkerConnection.Reply {
        var worker = try await plugin.worker()
        var retried = false
        while true {
            do {
                return try await worker.connection.call(call, service: service, body: body)
            } catch let lost as WorkerLost {
                // A read that was alone on its worker when it died is likely what killed
                // it: sent again it would kill the spare too and leave no worker ready.
                // One among others may be a bystander, and goes once to the next worker.
                guard call.isRetryable, !retried, lost.inFlight > 1 else { throw unavailable(lost) }
                retried = true
                worker = try await plugin.worker(afterLoss: true)
            }
        }
    }

    private func unavailable(_ lost: WorkerLost, midBody: Bool = false) -> PlugboardError {
        let what = midBody ? "its body had begun, and a body cannot be sent again"
            : !lost.call.isRetryable ? (lost.sent ? "it may or may not have taken effect" : "it was not sent")
            : lost.inFlight <= 1 ? "it was the worker's only call, likely what ended it, and is not sent again"
            : "its retry found no worker"
        return PlugboardError(.storageUnavailable, "plugin \"\(plugin.name)\"'s worker ended during \(lost.call.summary): \(what)",
            detail: "The isolated plugin's worker process ended (\(lost.ending)) before it answered; the host stays up and starts another.",
            hint: "Retry the request (Retry-After). A put or delete may have been applied: read the object to see.")
    }

    func unreadable(_ error: IPCError) -> PlugboardError {
        plugin.protocolViolation(error)
        return PlugboardError(.isolationProtocolViolation, "plugin \"\(plugin.name)\"'s worker sent an answer the host cannot read: \(error)",
            detail: "Expected an answer in the worker protocol; the worker was killed and is being replaced.",
            hint: "Retry the request. A worker that sends such answers runs other code than the host's own plugboard worker.")
    }

    func lostMidBody(_ lost: WorkerLost) -> any Error {
        unavailable(lost, midBody: true)
    }

    var peer: String { "plugin \"\(plugin.name)\"'s worker" }

    /// Healthy when a worker is ready and, if the plugin checks its own health, it says so.
    func healthCheck() async throws {
        if checksHealth {
            _ = try await perform(.healthCheck(name: service), body: nil)
        } else {
            _ = try await plugin.worker()
        }
    }

    /// The worker started the plugin's services before it said it was ready.
    func start() async throws {}

    /// Stops the plugin's workers (each stops its plugin's services first).
    func stop() async {
        await plugin.stop()
    }
}
