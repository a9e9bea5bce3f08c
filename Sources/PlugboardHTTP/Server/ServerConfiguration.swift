/// Where the server listens and how much it lets clients take: connections, time and
/// bytes. A slow or idle client is dropped by these deadlines, never waited on forever.
public struct ServerConfiguration: Sendable {
    /// A numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`).
    public var host: String
    /// 0 picks a free port.
    public var port: Int
    public var limits: HTTPLimits
    /// Open connections at most; one more is answered 503 and closed.
    public var maxConnections: Int
    /// How long a kept-alive connection may wait for its next request.
    public var idleTimeoutSeconds: Double
    /// How long a request line and header section may take to arrive, from the first byte.
    public var headerTimeoutSeconds: Double
    /// The longest silence inside a body, and the grace period before the rate applies.
    public var bodyTimeoutSeconds: Double
    /// The slowest average body rate accepted after the grace period.
    public var minBodyBytesPerSecond: Int
    /// How long a response write may block on a client that does not read.
    public var writeTimeoutSeconds: Double

    public init(host: String = "127.0.0.1", port: Int = 8080, limits: HTTPLimits = HTTPLimits(),
                maxConnections: Int = 256, idleTimeoutSeconds: Double = 60, headerTimeoutSeconds: Double = 10,
                bodyTimeoutSeconds: Double = 10, minBodyBytesPerSecond: Int = 1024, writeTimeoutSeconds: Double = 30) {
        self.host = host
        self.port = port
        self.limits = limits
        self.maxConnections = maxConnections
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.minBodyBytesPerSecond = minBodyBytesPerSecond
        self.writeTimeoutSeconds = writeTimeoutSeconds
    }
}

/// What the server asks of the application.
public protocol HTTPHandler: Sendable {
    /// Answers a well-formed request. Runs on the connection's own thread; it may suspend.
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// Answers a request the server refused before it was complete (`head` is nil when
    /// even the head could not be read) or a connection over the limit.
    func refusal(_ error: HTTPError, head: RequestHead?) -> HTTPResponse
    /// Called after each response is written, for access logs and metrics.
    func completed(_ exchange: Exchange)
}

/// One request and its answer, as the access log and the metrics see it.
public struct Exchange: Sendable {
    public var method: String
    /// The request target, or `-` when it could not be read.
    public var target: String
    public var status: Int
    /// Body bytes sent.
    public var bytes: Int
    public var durationSeconds: Double
    public var peer: String
}
