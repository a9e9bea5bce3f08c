import PlugboardAPI
import PlugboardConcurrency
import PlugboardEtcd
import PlugboardTestSupport
import Testing

/// The cluster the tests that kill no member share, started once, on first use; its
/// watchdog stops it when the test process ends.
enum SharedEtcd {
    static let cluster = Task { () throws(EtcdClusterError) -> EtcdCluster in try await EtcdCluster.start() }

    static func get() async throws -> EtcdCluster { try await cluster.value }
}

extension EtcdCluster {
    /// The members' endpoints as the client takes them.
    var etcdEndpoints: [EtcdEndpoint] { endpoints.map { EtcdEndpoint(host: $0.host, port: $0.port) } }

    /// A client of every member, logging into `lines` when given.
    func client(requestTimeout: Duration = .seconds(5), lines: CapturedLog? = nil) -> EtcdClient {
        EtcdClient(endpoints: etcdEndpoints, requestTimeout: requestTimeout, logger: lines?.logger ?? Logger.disabled)
    }
}

/// A prefix no other test (or earlier run on a shared cluster) uses.
func freshPrefix(_ label: String) -> String {
    "/test/\(label)-\(UInt32.random(in: 0...UInt32.max))/"
}

/// How long a wait in these tests may take before it counts as hung: elections and
/// reconnections take seconds on a loaded machine, never this long.
let hangBound: Duration = .seconds(60)

/// Runs `body`, failing (with `what`) if it takes longer than `bound`.
func within<T: Sendable>(_ what: String, bound: Duration = hangBound,
                         _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: bound)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw EtcdClusterError("\(what) did not finish within \(bound)")
        }
        return value
    }
}

/// Keeps every log line, so that a test can count warnings.
final class CapturedLog: Sendable {
    private let stored = LockedValueBox<[(Logger.Level, String)]>([])

    var lines: [(level: Logger.Level, message: String)] { stored.withLock { $0.map { ($0.0, $0.1) } } }

    func warnings(containing text: String) -> Int {
        lines.filter { $0.level == .warning && $0.message.contains(text) }.count
    }

    var logger: Logger { Logger(label: "etcd-tests", logLevel: .debug, handler: Handler(log: self)) }

    struct Handler: LogHandler {
        let log: CapturedLog
        func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
            log.stored.withLock { $0.append((level, message)) }
        }
    }
}
