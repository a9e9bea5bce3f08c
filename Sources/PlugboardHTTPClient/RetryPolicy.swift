/// When and how long a client waits before it sends a request again: exponential backoff
/// with full jitter (AWS's "Exponential Backoff and Jitter"), so that many clients that
/// failed together do not come back together. RESTStorage, S3Storage and the etcd client
/// retry by it, and a fleet host's agent waits by it while etcd is unreachable.
///
/// Attempt `n` (0 for the first retry) waits a random time between 0 and
/// `min(maxDelay, baseDelay * 2^n)`; a server's `Retry-After` raises that to the time it
/// asks for, up to `maxDelay`. The default cap, 5 seconds, keeps a call that is retried
/// three times well under a minute while still honouring the short `Retry-After` a
/// server sends when it is briefly overloaded (Plugboard's own 503s ask for 1 second);
/// a server asking for longer is asked again after 5 seconds.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt; 0 sends every request once.
    public var maxRetries: Int
    public var baseDelay: Duration
    public var maxDelay: Duration

    public init(maxRetries: Int, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The wait before retry number `retry` (0-based), given a uniform random `unit` in
    /// `0..<1` (drawn here unless given) and the server's `Retry-After` seconds, if any.
    public func delay(beforeRetry retry: Int, unit: Double = Double.random(in: 0..<1), retryAfterSeconds: Int? = nil) -> Duration {
        let shift = min(max(retry, 0), 30)
        let ceiling = min(maxDelay, baseDelay * (1 << shift))
        var wait = ceiling * min(max(unit, 0), 1)
        if let retryAfterSeconds, retryAfterSeconds > 0 {
            wait = max(wait, min(maxDelay, .seconds(retryAfterSeconds)))
        }
        return wait
    }

    /// Whether a request may be sent again at all: GET, HEAD, PUT and DELETE are
    /// idempotent (RFC 9110, 9.2.2); POST is not in general, and a client whose POSTs are
    /// (S3's multipart calls) decides that itself.
    public static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .delete, .put: return true
        case .post: return false
        }
    }

    /// Whether this outcome of one attempt is worth another: a gateway or availability
    /// status (502, 503, 504) or a request that got no answer (connection refused or
    /// dropped, timed out). Every other status is the server's considered answer.
    public static func isRetryable(_ outcome: Result<HTTPResponse, TransportFailure>) -> Bool {
        switch outcome {
        case .success(let response): return [502, 503, 504].contains(response.status)
        case .failure(let failure): return failure.kind == .cannotConnect || failure.kind == .timedOut
        }
    }
}

/// Waits between attempts; tests inject one that records the waits and returns at once.
public protocol RetrySleeper: Sendable {
    /// Waits `duration`; throws `CancellationError` when the calling task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// Sleeps on the continuous clock.
public struct TaskSleeper: RetrySleeper {
    public init() {}
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
