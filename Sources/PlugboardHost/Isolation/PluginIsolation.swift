import PlugboardIPC

/// Where a plugin's code runs: the manifest entry's `"isolation"` and `"worker"`.
public enum PluginIsolation: Sendable, Hashable, CustomStringConvertible {
    /// Mapped into the host's own process (the default): the fastest calls, and the
    /// host's whole trust: a trap in the plugin ends the host.
    case inProcess
    /// In a supervised worker child of its own, behind proxies (``IsolatedPlugin``).
    case process(WorkerSettings)

    /// The manifest's word for it: `in-process` or `process`.
    public var description: String {
        switch self {
        case .inProcess: "in-process"
        case .process: "process"
        }
    }

    public var worker: WorkerSettings? {
        if case .process(let settings) = self { return settings }
        return nil
    }
}

/// How the host supervises an isolated plugin's worker (the entry's `"worker"` object);
/// every field has a default.
public struct WorkerSettings: Sendable, Hashable {
    /// Keep a second worker started and ready, so that a crash switches to it in
    /// milliseconds instead of a process start. Default true.
    public var spare: Bool
    /// Crashes within ``crashWindowSeconds`` after which the plugin is no longer restarted
    /// and is marked failed. Default 5.
    public var maxCrashes: Int
    /// Default 60.
    public var crashWindowSeconds: Double
    /// A call that makes no progress for this long means the worker hangs: it is killed
    /// and replaced. Default 30.
    public var callTimeoutSeconds: Double
    /// How long a worker may take to load and start its plugin. Default 30.
    public var startTimeoutSeconds: Double
    /// The wire's transport: the shared-memory ring (the default: docs/BENCHMARKS.md, "The
    /// isolated plugin's wire") or the Unix socket it is measured against.
    public var transport: TransportKind = .ring
    /// What the worker's sandbox grants (the entry's `"sandbox"`): its limits and paths.
    public var sandbox: ManifestSandbox = ManifestSandbox()

    public init(spare: Bool = true, maxCrashes: Int = 5, crashWindowSeconds: Double = 60, callTimeoutSeconds: Double = 30,
                startTimeoutSeconds: Double = 30) {
        self.spare = spare
        self.maxCrashes = maxCrashes
        self.crashWindowSeconds = crashWindowSeconds
        self.callTimeoutSeconds = callTimeoutSeconds
        self.startTimeoutSeconds = startTimeoutSeconds
    }

    /// The keys of the `worker` object.
    static let keys = ["spare", "maxCrashes", "crashWindowSeconds", "callTimeoutSeconds", "startTimeoutSeconds", "transport"]
}
