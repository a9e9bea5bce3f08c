import PlugboardAPI

// An isolated plugin's refusals and failures (docs/ERRORS.md, "isolation").
extension PlugboardError.Code {
    /// The isolated plugin registers a service the host cannot carry to a worker process.
    public static let isolationUnsupportedService: Self = "isolation.unsupported_service"
    /// The manifest asks for isolation where it cannot be had (a layer, for now).
    public static let isolationUnsupported: Self = "isolation.unsupported"
    /// The worker child could not be started (spawn, wire) or ended before it was ready.
    public static let isolationWorkerFailed: Self = "isolation.worker_failed"
    /// The worker broke the wire's protocol; it was killed.
    public static let isolationProtocolViolation: Self = "isolation.protocol_violation"
    /// The plugin crashed too often (its crash-loop limit) and is no longer restarted.
    public static let isolationCrashLoop: Self = "isolation.crash_loop"
}
