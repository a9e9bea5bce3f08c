import PlugboardAPI
import PlugboardJSON

/// What the host asks a preflight child to check: the plugins to load, in load order
/// (the ones a target `requires` come before it), each with the content-addressed copy
/// the host will map and its resolved config.
///
/// Sent as one JSON document on the child's descriptor 3, never on its command line:
/// configs hold secrets, and `/proc/PID/cmdline` is world-readable.
public struct PreflightRequest: Sendable {
    public struct Plugin: Sendable {
        public var name: String
        /// The cache copy (or its `.d` link folder path) the host will `dlopen`.
        public var path: String
        /// The SHA-256 the host computed when it staged the copy.
        public var sha256: String
        public var rank: Int
        public var config: PluginConfig
        /// The plugins of this request it needs active first (what it wraps included).
        public var requires: [String]
        /// The plugin whose providers its layers wrap, or nil.
        public var wraps: String?
        /// An isolated plugin's worker settings: the host checks it by starting its first
        /// worker, sandboxed as it will serve, rather than in this child
        /// (``PluginHost/preflight(_:loader:runner:environment:timeoutSeconds:secrets:checkOnly:)``).
        /// Host-side only: never sent to a child.
        public var worker: WorkerSettings?

        public init(name: String, path: String, sha256: String, rank: Int, config: PluginConfig, requires: [String] = [],
                    wraps: String? = nil, worker: WorkerSettings? = nil) {
            self.name = name
            self.path = path
            self.sha256 = sha256
            self.rank = rank
            self.config = config
            self.requires = requires
            self.wraps = wraps
            self.worker = worker
        }

        /// `plugin` as staged, with its resolved config.
        init(_ staged: StagedPlugin, _ plugin: ManifestPlugin, config: PluginConfig?) {
            self.init(name: plugin.name, path: staged.loadPath, sha256: staged.sha256, rank: plugin.rank,
                      config: config ?? PluginConfig(plugin: plugin.name), requires: plugin.dependencies, wraps: plugin.wraps,
                      worker: plugin.isolation.worker)
        }
    }

    public var environment: Environment
    public var cacheDirectory: String
    public var plugins: [Plugin]
    /// The manifest's secrets: the child hides them in what the plugins hand back before
    /// it reports, as the host does.
    public var secrets: SecretScrubber
    /// `plugboard check`'s request: the plugins are told so (``PluginRegistrar/checkOnly``).
    public var checkOnly: Bool

    public init(environment: Environment, cacheDirectory: String, plugins: [Plugin], secrets: SecretScrubber = .none,
                checkOnly: Bool = false) {
        self.environment = environment
        self.cacheDirectory = cacheDirectory
        self.plugins = plugins
        self.secrets = secrets
        self.checkOnly = checkOnly
    }

    func encoded() -> [UInt8] {
        let plugins: [JSONOutput] = plugins.map { p in
            .object([("name", .string(p.name)), ("path", .string(p.path)), ("sha256", .string(p.sha256)),
                     ("rank", .int(Int64(p.rank))), ("config", .config(.object(p.config.values))),
                     ("baseDirectory", .string(p.config.baseDirectory)), ("manifest", .string(p.config.manifest)),
                     ("requires", .array(p.requires.map { .string($0) })),
                     ("wraps", p.wraps.map { .string($0) } ?? .null)])
        }
        let doc = JSONOutput.object([("environment", .string(environment.name)), ("cacheDirectory", .string(cacheDirectory)),
                                     ("plugins", .array(plugins)), ("secrets", .array(secrets.secrets.map { .string($0) })),
                                     ("checkOnly", .bool(checkOnly))])
        return Array(doc.render(pretty: false).utf8)
    }

    static func decode(_ bytes: [UInt8]) throws(PlugboardError) -> PreflightRequest {
        let doc = try JSONParser.parse(bytes, source: "preflight request", limits: .init(maxBytes: 64 << 20, maxDepth: 128))
        guard let envName = doc["environment"]?.stringValue, let environment = Environment(envName),
              let cache = doc["cacheDirectory"]?.stringValue, case .array(let items)? = doc["plugins"]?.kind else {
            throw PreflightWire.malformed("the request lacks environment, cacheDirectory or plugins")
        }
        var plugins: [Plugin] = []
        for item in items {
            guard let name = item["name"]?.stringValue, let path = item["path"]?.stringValue,
                  let sha = item["sha256"]?.stringValue, case .integer(let rank)? = item["rank"]?.kind,
                  case .object(let values)? = item["config"]?.configValue else {
                throw PreflightWire.malformed("a plugin entry lacks name, path, sha256, rank or config")
            }
            var requires: [String] = []
            if case .array(let names)? = item["requires"]?.kind { requires = names.compactMap(\.stringValue) }
            plugins.append(Plugin(name: name, path: path, sha256: sha, rank: Int(rank),
                                  config: PluginConfig(values, plugin: name, baseDirectory: item["baseDirectory"]?.stringValue,
                                                       manifest: item["manifest"]?.stringValue),
                                  requires: requires, wraps: item["wraps"]?.stringValue))
        }
        var secrets: [String] = []
        if case .array(let values)? = doc["secrets"]?.kind { secrets = values.compactMap(\.stringValue) }
        var checkOnly = false
        if case .bool(let value)? = doc["checkOnly"]?.kind { checkOnly = value }
        return PreflightRequest(environment: environment, cacheDirectory: cache, plugins: plugins,
                                secrets: SecretScrubber(secrets: secrets), checkOnly: checkOnly)
    }
}

/// The child's messages on its descriptor 4, one JSON object a line: `{"begin": NAME}`
/// before it runs a plugin's code, so that the host can name the plugin when the child
/// dies, then one `{"record": ...}` per plugin once it is checked.
enum PreflightWire {
    static func begin(_ name: String) -> [UInt8] {
        Array((JSONOutput.object([("begin", .string(name))]).render(pretty: false) + "\n").utf8)
    }

    /// Before the scratch container stops the managed services of `plugins`.
    static func stopping(_ plugins: [String]) -> [UInt8] {
        Array((JSONOutput.object([("stopping", .array(plugins.map { .string($0) }))]).render(pretty: false) + "\n").utf8)
    }

    static let stopped = Array("{\"stopped\":true}\n".utf8)

    static func record(_ r: PluginRecord) -> [UInt8] {
        let doc = JSONOutput.object([("record", .object([
            ("name", .string(r.name)), ("state", .string(r.state.description)), ("version", .string(r.version)),
            ("sha256", .string(r.sha256)), ("services", .array(r.services.map { .string($0) })),
            ("generation", r.generation.map { .int(Int64($0)) } ?? .null), ("error", JSONOutput.errorBody(r.error)),
        ]))])
        return Array((doc.render(pretty: false) + "\n").utf8)
    }

    /// What the host read: the records received and the plugin whose code ran last
    /// without a record after it.
    struct Transcript {
        var records: [PluginRecord] = []
        /// The plugins whose code runs now (several while their services stop).
        var running: [String] = []
        /// Whether the child got through stopping the services (its last message).
        var complete = false
    }

    static func parse(_ bytes: [UInt8]) throws(PlugboardError) -> Transcript {
        var transcript = Transcript()
        for line in bytes.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let doc = try JSONParser.parse(Array(line), source: "preflight report", limits: .init(maxBytes: 16 << 20, maxDepth: 64))
            if let name = doc["begin"]?.stringValue {
                transcript.running = [name]
            } else if case .array(let names)? = doc["stopping"]?.kind {
                transcript.running = names.compactMap(\.stringValue)
            } else if doc["stopped"] != nil {
                transcript.running = []
                transcript.complete = true
            } else if let r = doc["record"] {
                guard let name = r["name"]?.stringValue, let state = r["state"]?.stringValue else {
                    throw malformed("a record lacks its name or state")
                }
                var record = PluginRecord(name: name, state: PluginState(decoding: state), version: r["version"]?.stringValue,
                                          sha256: r["sha256"]?.stringValue)
                if case .array(let services)? = r["services"]?.kind { record.services = services.compactMap(\.stringValue) }
                if case .integer(let g)? = r["generation"]?.kind { record.generation = UInt64(g) }
                if let e = r["error"], let code = e["code"]?.stringValue, let message = e["message"]?.stringValue {
                    record.error = PlugboardError(PlugboardError.Code(code), message, detail: e["detail"]?.stringValue,
                                                  hint: e["hint"]?.stringValue)
                }
                transcript.records.append(record)
                if transcript.running == [name] { transcript.running = [] }
            } else {
                throw malformed("an unknown message")
            }
        }
        return transcript
    }

    static func malformed(_ what: String) -> PlugboardError {
        PlugboardError(.preflightFailed, "malformed preflight message: \(what)",
                       detail: "The host and its preflight child exchange JSON on descriptors 3 and 4.",
                       hint: "The plugboard executable that ran the preflight is another build than the host; rebuild.")
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let s) = kind { return s }
        return nil
    }
}

extension PluginState {
    /// The state a report names; an unknown name reads as `failed`.
    init(decoding name: String) {
        self = [PluginState.active, .failed, .rejected, .disabled, .skipped, .retired].first { $0.description == name } ?? .failed
    }
}
