#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC

/// What starting a worker child needs from the host: its executable (the running
/// `plugboard`), its environment (the host's, captured once, as a preflight child's), the
/// arguments the host's own children get (the log format), and the wire to use.
public struct WorkerLauncher: Sendable {
    public var executable: String
    /// `NAME=value` pairs: the whole environment of the child.
    public var environment: [String]
    public var arguments: [String]
    public var transport: TransportKind

    public init(executable: String, environment: [String: String], arguments: [String], transport: TransportKind = .socket) {
        self.executable = executable
        var pairs = environment.filter { $0.key != "SWIFT_BACKTRACE" && $0.key != "NOTIFY_SOCKET" }.map { "\($0.key)=\($0.value)" }.sorted()
        // A crash is what supervision expects; the backtracer would take seconds over it.
        pairs.append("SWIFT_BACKTRACE=enable=no")
        self.environment = pairs
        self.arguments = arguments
        self.transport = transport
    }

    /// Children are spawned from one long-lived thread (their `PR_SET_PDEATHSIG` fires when
    /// the spawning thread ends).
    static let spawner = SpawnerThread()

    /// Starts a worker child over a new wire; its descriptors are closed here once handed over.
    func launch() async -> Result<(pid: pid_t, transport: any FrameTransport), PlugboardError> {
        let made: (host: any FrameTransport, child: [Int32])
        do throws(IPCError) {
            made = try Transports.make(transport)
        } catch {
            return .failure(PlugboardError(.isolationWorkerFailed, "could not make a worker's wire: \(error)",
                hint: "The host could not create a socket pair or shared memory; check its descriptor limit (ulimit -n)."))
        }
        let (executable, environment, kind) = (executable, environment, transport)
        let arguments = ["worker", "--parent-pid", String(getpid()), "--transport", kind.rawValue,
                         "--descriptors", String(made.child.count)] + self.arguments
        let spawned = await BlockingWork.handOff(to: Self.spawner.submit) { () -> Result<pid_t, ChildProcess.SpawnFailure> in
            ChildProcess.spawn(executable, arguments: arguments, environment: environment, descriptors: made.child)
        }
        for fd in made.child { close(fd) }
        switch spawned {
        case .success(let pid): return .success((pid, made.host))
        case .failure(let failure):
            made.host.close()
            return .failure(PlugboardError(.isolationWorkerFailed, "could not start a worker process: \(failure.text)",
                hint: "The host runs its own executable as plugboard worker; check that it still exists and can be executed."))
        }
    }
}
