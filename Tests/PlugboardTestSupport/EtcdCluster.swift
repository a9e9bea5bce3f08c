#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency

/// A real etcd cluster on loopback for the tests: each member an `etcd` process with its
/// own client and peer port and its own data folder, in a fresh folder under /tmp.
///
/// Members start in parallel (`--initial-cluster-state new`) and the cluster is ready when
/// every member's `/health` says true, which needs an elected leader. Members are stopped
/// (SIGTERM), killed (SIGKILL) and started again by their index; ``stopAll()``, and the
/// deinit, end every member by its pid. The pids go to `FOLDER/pids` in the format
/// `Tests/e2e/etcd.sh stop FOLDER` reads, and a watchdog shell runs that when the test
/// process ends without stopping its cluster (killed, crashed, or a cluster shared by a
/// suite, which no deinit ends), so no member outlives it.
///
/// ```swift
/// @Suite(.enabled(if: EtcdCluster.isInstalled, "etcd not installed: apt-get install etcd-server")) struct MyTests {
///     @Test func works() async throws {
///         let cluster = try await EtcdCluster.start()
///         defer { cluster.stopAll() }
///         ... cluster.endpoints ...
///     }
/// }
/// ```
public final class EtcdCluster: Sendable {
    /// Why a suite that needs etcd is skipped.
    public static let notInstalled = "etcd not installed: apt-get install etcd-server"

    /// Whether an `etcd` executable is on PATH (or at `PLUGBOARD_ETCD`).
    public static var isInstalled: Bool { executable != nil }

    /// The `etcd` to run: `PLUGBOARD_ETCD`, else the first on PATH.
    public static let executable: String? = {
        if let given = getenv("PLUGBOARD_ETCD").map({ String(cString: $0) }), !given.isEmpty {
            return access(given, X_OK) == 0 ? given : nil
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where access("\(folder)/etcd", X_OK) == 0 {
            return "\(folder)/etcd"
        }
        return nil
    }()

    /// How long a start may take before it counts as hung: a three-member election takes
    /// a few seconds on an idle machine, a loaded CI machine may take many times that.
    public static let startBound: Duration = .seconds(90)

    /// One member's addresses and folder.
    public struct Member: Sendable {
        public let name: String
        public let clientPort: Int
        public let peerPort: Int
        public let dataFolder: String
    }

    public let folder: String
    public let members: [Member]
    private let pids: LockedValueBox<[pid_t?]>
    private let watchdog: pid_t?

    /// The members' client addresses, `127.0.0.1` and port, in member order.
    public var endpoints: [(host: String, port: Int)] { members.map { ("127.0.0.1", $0.clientPort) } }
    /// `127.0.0.1:PORT,...`, as `PLUGBOARD_ETCD_ENDPOINTS` and `--fleet` take them.
    public var endpointList: String { members.map { "127.0.0.1:\($0.clientPort)" }.joined(separator: ",") }

    /// Starts a cluster of `size` members and waits until each is healthy.
    public static func start(size: Int = 3) async throws(EtcdClusterError) -> EtcdCluster {
        let cluster = try EtcdCluster(size: size)
        do throws(EtcdClusterError) {
            for index in 0..<size { try cluster.spawn(index) }
            try await cluster.waitHealthy(Array(0..<size))
        } catch {
            cluster.stopAll()
            throw error
        }
        return cluster
    }

    private init(size: Int) throws(EtcdClusterError) {
        guard Self.executable != nil else { throw EtcdClusterError(Self.notInstalled) }
        let folder = BuildProducts.temporaryFolder("plugboard-etcd")
        self.folder = folder
        var ports: Set<Int> = []
        while ports.count < size * 2 { ports.insert(try Self.freePort()) }
        let list = Array(ports)
        members = (0..<size).map { index in
            Member(name: "m\(index)", clientPort: list[2 * index], peerPort: list[2 * index + 1],
                   dataFolder: "\(folder)/m\(index).data")
        }
        pids = LockedValueBox(Array(repeating: nil, count: size))
        watchdog = Self.startWatchdog(folder: folder)
    }

    deinit {
        stopAll()
        if let watchdog {
            Glibc.kill(watchdog, SIGKILL)
            var status: Int32 = 0
            waitpid(watchdog, &status, 0)
        }
        if let remover = try? Self.spawn("/bin/rm", ["-rf", folder], log: "/dev/null") {
            var status: Int32 = 0
            waitpid(remover, &status, 0)
        }
    }

    /// Whether member `index` runs (was started and not stopped by this object).
    public func isRunning(_ index: Int) -> Bool { pids.withLock { $0[index] != nil } }

    /// Starts member `index` again (its data folder kept) and waits until it is healthy,
    /// which needs a quorum of members running.
    public func start(member index: Int) async throws(EtcdClusterError) {
        try spawn(index)
        try await waitHealthy([index])
    }

    /// Starts several members again at once, then waits until each is healthy: a cluster
    /// of which every member was stopped needs a quorum back before any is healthy.
    public func start(members indexes: [Int]) async throws(EtcdClusterError) {
        for index in indexes { try spawn(index) }
        try await waitHealthy(indexes)
    }

    /// Stops member `index` with SIGTERM (etcd steps down and closes cleanly) and reaps it.
    public func stop(member index: Int) {
        end(index, signal: SIGTERM)
    }

    /// Kills member `index` with SIGKILL, as a crash or a lost machine would, and reaps it.
    public func kill(member index: Int) {
        end(index, signal: SIGKILL)
    }

    /// Stops every member that runs (SIGTERM, SIGKILL after a bound).
    public func stopAll() {
        for index in members.indices { end(index, signal: SIGTERM) }
    }

    /// The index of the member the others follow, asked of each running member through
    /// `/v3/maintenance/status`; waits while an election runs.
    public func leader() async throws(EtcdClusterError) -> Int {
        let deadline = ContinuousClock.now + Self.startBound
        while ContinuousClock.now < deadline {
            var ids: [Int: String] = [:]
            var leaders: Set<String> = []
            for index in members.indices where isRunning(index) {
                guard let body = await LoopbackHTTP.post(port: members[index].clientPort, path: "/v3/maintenance/status", body: "{}"),
                      let member = LoopbackHTTP.field("member_id", in: body), let leader = LoopbackHTTP.field("leader", in: body)
                else { continue }
                ids[index] = member
                if leader != "0" { leaders.insert(leader) }
            }
            if leaders.count == 1, let leader = leaders.first, let index = ids.first(where: { $0.value == leader })?.key {
                return index
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        throw EtcdClusterError("no leader agreed on by the running members within \(Self.startBound) (logs in \(folder))")
    }

    // MARK: Processes

    private func spawn(_ index: Int) throws(EtcdClusterError) {
        guard let executable = Self.executable else { throw EtcdClusterError(Self.notInstalled) }
        let member = members[index]
        mkdir(member.dataFolder, 0o700)
        let cluster = members.map { "\($0.name)=http://127.0.0.1:\($0.peerPort)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name, "--data-dir", member.dataFolder,
            "--listen-client-urls", "http://127.0.0.1:\(member.clientPort)",
            "--advertise-client-urls", "http://127.0.0.1:\(member.clientPort)",
            "--listen-peer-urls", "http://127.0.0.1:\(member.peerPort)",
            "--initial-advertise-peer-urls", "http://127.0.0.1:\(member.peerPort)",
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", "plugboard-test-\(folder.split(separator: "/").last ?? "")",
            "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
        ]
        let pid = try Self.spawn(executable, arguments, log: "\(folder)/\(member.name).log")
        pids.withLock { $0[index] = pid }
        // The format Tests/e2e/etcd.sh stop reads; the watchdog runs it.
        let line = "\(member.name) \(pid)\n"
        let fd = open("\(folder)/pids", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if fd >= 0 {
            _ = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
        }
    }

    private func end(_ index: Int, signal: Int32) {
        guard let pid = pids.withLock({ pids -> pid_t? in
            defer { pids[index] = nil }
            return pids[index]
        }) else { return }
        Glibc.kill(pid, signal)
        // etcd stops within a second or two; a member stuck past the bound is killed.
        let deadline = ContinuousClock.now + .seconds(30)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now > deadline {
                Glibc.kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return
            }
            usleep(10_000)
        }
    }

    /// Waits until each of `indexes` answers `/health` with true (it has a leader).
    private func waitHealthy(_ indexes: [Int]) async throws(EtcdClusterError) {
        let deadline = ContinuousClock.now + Self.startBound
        var waiting = Set(indexes)
        while !waiting.isEmpty {
            for index in waiting {
                if let body = await LoopbackHTTP.get(port: members[index].clientPort, path: "/health"),
                   body.contains("\"health\":\"true\"") {
                    waiting.remove(index)
                }
                guard let pid = pids.withLock({ $0[index] }) else { continue }
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    pids.withLock { $0[index] = nil }
                    throw EtcdClusterError("etcd member \(members[index].name) exited (status \(status)) while starting: \(tail("\(folder)/\(members[index].name).log"))")
                }
            }
            if waiting.isEmpty { return }
            guard ContinuousClock.now < deadline else {
                throw EtcdClusterError("etcd members \(waiting.sorted().map { members[$0].name }) not healthy within \(Self.startBound) (logs in \(folder))")
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func tail(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "no log" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes.suffix(1500), as: UTF8.self)
    }

    /// Spawns `program` with this process's environment (bar systemd's and etcd's own
    /// variables), its output and errors appended to `log`.
    static func spawn(_ program: String, _ arguments: [String], log: String) throws(EtcdClusterError) -> pid_t {
        // No NOTIFY_SOCKET: a test runner started by systemd must not have etcd speak to it.
        let environment = ChildProcess.environment.filter { $0.key != "NOTIFY_SOCKET" && !$0.key.hasPrefix("ETCD_") }
        do throws(ChildProcessError) {
            return try ChildProcess.spawn(program, arguments, environment: environment, stdout: .file(log, append: true),
                                          stderr: .standardOutput)
        } catch {
            throw EtcdClusterError(error.description)
        }
    }

    /// A shell that waits for this process to end, then stops what `FOLDER/pids` names
    /// (with Tests/e2e/etcd.sh's check that each pid is still a member of this folder)
    /// and removes the folder, as the deinit does.
    private static func startWatchdog(folder: String) -> pid_t? {
        let script = """
            while kill -0 "$1" 2>/dev/null; do sleep 1; done
            "$2" stop "$3" >/dev/null 2>&1
            rm -rf "$3"
            """
        return try? spawn("/bin/sh", ["-c", script, "etcd-watchdog", String(getpid()), etcdScript, folder], log: "/dev/null")
    }

    /// Tests/e2e/etcd.sh, from this file's place in the package.
    static var etcdScript: String {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) }
        return path + "/e2e/etcd.sh"
    }

    /// A loopback port that was free a moment ago.
    public static func freePort() throws(EtcdClusterError) -> Int {
        guard let port = LoopbackSocket.freePort() else { throw EtcdClusterError("could not bind a loopback port: \(String(cString: strerror(errno)))") }
        return port
    }
}

/// Why a test cluster could not be started or asked.
public struct EtcdClusterError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
