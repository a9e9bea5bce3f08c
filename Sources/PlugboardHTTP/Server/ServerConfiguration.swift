#if canImport(Glibc)
import Glibc
#endif
/// Where the server listens and how much it lets clients take: connections, time and
/// bytes. A slow or idle client is dropped by these deadlines, never waited on forever.
public struct ServerConfiguration: Sendable {
    /// A numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`).
    public var host: String
    /// 0 picks a free port.
    public var port: Int
    public var limits: HTTPLimits
    /// Event-loop threads; each owns the connections it accepted.
    public var eventLoops: Int
    /// Open connections at most; one more is answered 503 and closed. An idle connection
    /// costs a few KiB, so the default is high enough that idle connections from a few
    /// addresses cannot fill it.
    public var maxConnections: Int
    /// Open connections from one client address at most (one more: 503). The default,
    /// 2,048, takes a benchmark's `wrk -c1000` from one address, and holds an attacker on
    /// one address to an eighth of the default ``maxConnections``.
    public var maxConnectionsPerClient: Int
    /// How long a new connection may wait before its first byte: short, because a
    /// connection that sends nothing is either broken or an attack.
    public var firstByteTimeoutSeconds: Double
    /// How long a kept-alive connection may wait for its next request.
    public var idleTimeoutSeconds: Double
    /// How long a request line and header section may take to arrive, from the first byte.
    public var headerTimeoutSeconds: Double
    /// The longest silence inside a body, and the grace period before the rate applies.
    public var bodyTimeoutSeconds: Double
    /// The slowest transfer accepted, in both directions, over a sliding window: for a body
    /// as long as the longest pause allowed in it (``bodyTimeoutSeconds``, at least 10 s),
    /// so that a pause the server allows is never refused as too slow by itself; for an
    /// answer, 10 s. A body arriving slower gets 408; an answer read slower ends the
    /// connection.
    public var minBodyBytesPerSecond: Int
    /// How long an answer may wait on a client that reads nothing; an answer's whole
    /// delivery may take this plus its size at the minimum rate.
    public var writeTimeoutSeconds: Double
    /// Body bytes held in memory at once, all connections together.
    public var maxBufferedBytes: Int
    /// Whether a request's task starts on its loop's thread (`Task.immediate`) and runs
    /// there until it first suspends, instead of starting on the cooperative pool: an
    /// answer that is ready at once then costs no thread hop. docs/BENCHMARKS.md has both.
    public var immediateHandlers: Bool
    /// Whether a request without a body is first offered to
    /// ``HTTPHandler/respondWithoutWaiting(to:)`` on its loop's thread, so that an answer
    /// ready at once costs no task. docs/BENCHMARKS.md has both.
    public var answersWithoutWaiting: Bool

    public init(host: String = "127.0.0.1", port: Int = 8080, limits: HTTPLimits = HTTPLimits(),
                eventLoops: Int = ServerConfiguration.defaultEventLoops,
                maxConnections: Int = 16_384, maxConnectionsPerClient: Int = 2048,
                firstByteTimeoutSeconds: Double = 5, idleTimeoutSeconds: Double = 60, headerTimeoutSeconds: Double = 10,
                bodyTimeoutSeconds: Double = 10, minBodyBytesPerSecond: Int = 1024, writeTimeoutSeconds: Double = 30,
                maxBufferedBytes: Int = 256 << 20, immediateHandlers: Bool = true,
                answersWithoutWaiting: Bool = true) {
        self.host = host
        self.port = port
        self.limits = limits
        self.eventLoops = eventLoops
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.firstByteTimeoutSeconds = firstByteTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.minBodyBytesPerSecond = minBodyBytesPerSecond
        self.writeTimeoutSeconds = writeTimeoutSeconds
        self.maxBufferedBytes = maxBufferedBytes
        self.immediateHandlers = immediateHandlers
        self.answersWithoutWaiting = answersWithoutWaiting
    }

    /// One loop per core.
    public static var defaultEventLoops: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
