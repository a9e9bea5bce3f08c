import PlugboardAPI
import PlugboardIPC

/// In an isolated layer's worker, the storage its plugin wraps: every call goes back over
/// the worker's wire to the host, which serves it from the provider the layer wraps there
/// (in the host's process, or another worker's behind the host's own ``IsolatedStorage``).
///
/// The worker registers one, owned by the wrapped plugin's name, for each storage that
/// plugin provides in the host, before it loads the layer: the layer's `registerLayer`
/// finds it below as it finds the real provider in process. Its calls cross as
/// ``StorageOverWire`` says; when the host cannot serve one (the wrapped plugin's worker
/// died, say) the layer sees the host's error, as it would in process.
final class HostStorage: StorageOverWire, HealthChecking {
    private let connection: WorkerConnection
    /// The wrapped provider's name in the host's container (nil: unnamed).
    private let service: String?
    private let wrapped: String

    init(connection: WorkerConnection, service: String?, wrapped: String) {
        self.connection = connection
        self.service = service
        self.wrapped = wrapped
    }

    func perform(_ call: WorkerCall, body: ObjectBody?) async throws -> WorkerConnection.Reply {
        do {
            return try await connection.call(call, service: service, body: body)
        } catch let lost as WorkerLost {
            throw lostMidBody(lost)
        }
    }

    func unreadable(_ error: IPCError) -> PlugboardError {
        PlugboardError(.isolationProtocolViolation, "the host sent an answer this worker cannot read: \(error)",
            detail: "Expected an answer in the worker protocol from the storage of \"\(wrapped)\".",
            hint: "The host and its worker are the same plugboard executable; run it again.")
    }

    func lostMidBody(_ lost: WorkerLost) -> any Error {
        PlugboardError(.storageUnavailable, "the host ended this worker's wire during \(lost.call.summary) on the storage of \"\(wrapped)\"",
            detail: "The isolated layer's worker calls the storage it wraps through the host; the host closed the wire (\(lost.ending)).",
            hint: "Retry the request; the host is stopping or replacing this worker.")
    }

    var peer: String { "the host (the storage of \"\(wrapped)\")" }

    func healthCheck() async throws {
        _ = try await perform(.healthCheck(name: service), body: nil)
    }
}
