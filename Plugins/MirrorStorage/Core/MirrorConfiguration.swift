import PlugboardAPI

/// What a `MirrorStorage` is told by its config.
public struct MirrorConfiguration: Sendable {
    /// The manifest name of the plugin whose storage is the new backend.
    public var to: String
    /// The checkpoint file (a relative path is the working directory's, where the
    /// manifest's folder is not known).
    public var checkpoint: String
    /// Objects copied at once.
    public var concurrency: Int
    /// Keys asked of the old backend per listing page; a checkpoint is written after each.
    public var pageSize: Int
    /// The pause before another pass when a pass ended with failed copies.
    public var retrySeconds: Int
    /// The wait between the start and the first copy: a preflight child's mirror is
    /// stopped before it copies, and a hot swap's retiring requests drain meanwhile.
    public var startDelaySeconds: Int

    public init(to: String, checkpoint: String, concurrency: Int = 4, pageSize: Int = 1000, retrySeconds: Int = 30,
                startDelaySeconds: Int = 5) {
        self.to = to
        self.checkpoint = checkpoint
        self.concurrency = concurrency
        self.pageSize = pageSize
        self.retrySeconds = retrySeconds
        self.startDelaySeconds = startDelaySeconds
    }

    /// Reads `to`, `checkpoint` (default `<plugin>.mirror-checkpoint` in the manifest's
    /// folder), `concurrency` (1...64), `pageSize` (1...1000), `retrySeconds` (1...3600) and
    /// `startDelaySeconds` (0...3600).
    public init(_ config: PluginConfig) throws(PlugboardError) {
        try config.requireOnly(["to", "checkpoint", "concurrency", "pageSize", "retrySeconds", "startDelaySeconds"])
        let to = try config.string("to")
        if to.isEmpty || to == config.plugin {
            throw PlugboardError(.configInvalid, "plugin \"\(config.plugin)\": \"\(config.path).to\" names \(to.isEmpty ? "no plugin" : "the mirror itself")",
                detail: "Expected the name of the manifest entry whose storage is the new backend, found \"\(to)\".",
                hint: "Set \"to\" to the new backend's entry name, as \"wraps\" names the old backend's.")
        }
        var checkpoint: String
        if config["checkpoint"] == nil {
            checkpoint = "\(config.plugin).mirror-checkpoint"
            if let base = config.baseDirectory { checkpoint = base.hasSuffix("/") ? base + checkpoint : base + "/" + checkpoint }
        } else {
            checkpoint = try config.filePath("checkpoint")
        }
        self.init(to: to, checkpoint: checkpoint,
                  concurrency: try Self.bounded(config, "concurrency", 4, 1...64),
                  pageSize: try Self.bounded(config, "pageSize", 1000, 1...ListingRequest.maxLimit),
                  retrySeconds: try Self.bounded(config, "retrySeconds", 30, 1...3600),
                  startDelaySeconds: try Self.bounded(config, "startDelaySeconds", 5, 0...3600))
    }

    private static func bounded(_ config: PluginConfig, _ key: String, _ value: Int, _ range: ClosedRange<Int>) throws(PlugboardError) -> Int {
        let n = try config.int(key, default: value)
        guard range.contains(n) else {
            throw PlugboardError(.configInvalid, "plugin \"\(config.plugin)\": \"\(config.path).\(key)\" is out of range",
                detail: "Expected \(range.lowerBound) to \(range.upperBound), found \(n).",
                hint: "Set \"\(key)\" within \(range.lowerBound)...\(range.upperBound), or leave it out for \(value).")
        }
        return n
    }
}
