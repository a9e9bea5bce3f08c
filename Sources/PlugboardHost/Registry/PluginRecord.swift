import PlugboardAPI

/// One plugin as the host knows it: its state, what it declared, and why it failed.
public struct PluginRecord: Sendable {
    /// The manifest name; owner of its registrations.
    public var name: String
    public var state: PluginState
    /// The version the plugin declares, once its code has answered.
    public var version: String?
    /// The file it was loaded from (resolved), if known.
    public var path: String?
    /// The SHA-256 of that file, once read.
    public var sha256: String?
    /// What the file's plugin header says.
    public var header: PluginHeader?
    /// The services it registered (module-qualified), for an active plugin.
    public var services: [String]
    /// Why it is failed or rejected.
    public var error: PlugboardError?
    /// The container generation that published its services (for a retired plugin too:
    /// it served from that generation until the one that retired it).
    public var generation: UInt64?
    /// The trusted key whose signature its file carried when it was staged, or nil.
    public var signedBy: TrustedKey?
    /// Where its code runs: in the host, or in a worker process (the manifest's `isolation`).
    public var isolation: PluginIsolation = .inProcess
    /// An isolated plugin's supervisor: its worker's state, restarts and crashes, live.
    public var worker: IsolatedPlugin?

    /// Active, and for an isolated plugin not failed in its worker (a crash loop).
    public var isServing: Bool {
        state == .active && worker?.status != .failed
    }

    public init(name: String, state: PluginState, version: String? = nil, path: String? = nil,
                sha256: String? = nil, header: PluginHeader? = nil, services: [String] = [],
                error: PlugboardError? = nil) {
        self.name = name
        self.state = state
        self.version = version
        self.path = path
        self.sha256 = sha256
        self.header = header
        self.services = services
        self.error = error
    }
}
