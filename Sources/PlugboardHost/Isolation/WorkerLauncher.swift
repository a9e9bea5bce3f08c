#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardConcurrency
import PlugboardIPC
import CPlugboardSystem

/// What starting a worker child needs from the host: its executable (the running
/// `plugboard`), its environment (the host's, captured once, as a preflight child's), the
/// arguments the host's own children get (the log format), and the wire to use.
public struct WorkerLauncher: Sendable {
    public var executable: String
    /// `NAME=value` pairs: the whole environment of the child.
    public var environment: [String]
    public var arguments: [String]
    public var transport: TransportKind

    public init(executable: String, environment: [String: String], arguments: [String], transport: TransportKind = .ring) {
        self.executable = executable
        self.environment = ChildProcess.environment(environment)
        self.arguments = arguments
        self.transport = transport
    }

    /// Children are spawned from one long-lived thread (their `PR_SET_PDEATHSIG` fires when
    /// the spawning thread ends).
    static let spawner = SpawnerThread()

    /// A started worker: its process, the host's end of its wire, and the read end of the
    /// pipe its sandbox reports refusals on.
    struct Launched: Sendable {
        let pid: pid_t
        let transport: any FrameTransport
        let reports: Int32
    }

    /// Starts a worker child over a new wire; its descriptors are closed here once handed over.
    func launch() async -> Result<Launched, PlugboardError> {
        let made: (host: any FrameTransport, child: [Int32])
        do throws(IPCError) {
            made = try Transports.make(transport)
        } catch {
            return .failure(PlugboardError(.isolationWorkerFailed, "could not make a worker's wire: \(error)",
                hint: "The host could not create a socket pair or shared memory; check its descriptor limit (ulimit -n)."))
        }
        var reportPipe: [Int32] = [-1, -1]
        guard plugboard_pipe_cloexec(&reportPipe) == 0 else {
            let code = errno
            made.host.close()
            for fd in made.child { close(fd) }
            return .failure(PlugboardError(.isolationWorkerFailed, "could not make a worker's report pipe: \(PluginFile.errnoText(code))",
                hint: "Check the host's descriptor limit (ulimit -n)."))
        }
        let handed = made.child + [reportPipe[1]]
        let (executable, environment, kind) = (executable, environment, transport)
        let arguments = ["worker", "--parent-pid", String(getpid()), "--transport", kind.rawValue,
                         "--descriptors", String(made.child.count)] + self.arguments
        let spawned = await BlockingWork.handOff(to: Self.spawner.submit) { () -> Result<pid_t, ChildProcess.SpawnFailure> in
            ChildProcess.spawn(executable, arguments: arguments, environment: environment, descriptors: handed)
        }
        for fd in handed { close(fd) }
        switch spawned {
        case .success(let pid): return .success(Launched(pid: pid, transport: made.host, reports: reportPipe[0]))
        case .failure(let failure):
            made.host.close()
            close(reportPipe[0])
            return .failure(PlugboardError(.isolationWorkerFailed, "could not start a worker process: \(failure.text)",
                hint: "The host runs its own executable as plugboard worker; check that it still exists and can be executed."))
        }
    }
}
