/// A service with numbers for the host's `/metrics`: a copier's progress, a cache's hits.
///
/// Optional, as ``HealthChecking`` is: a provider of `ObjectStorage` (a layer included)
/// adopts it, and `plugboard serve` adds its samples to every scrape of `/metrics`, in the
/// Prometheus text format, after the host's own. Added in PlugboardAPI 1.6; plugins built
/// against earlier minors are simply not asked.
///
/// Implementation requirements: answer at once (it runs on each scrape, on the server's
/// thread), from counters already kept; name metrics `plugboard_<plugin>_...` in snake
/// case, counters ending in `_total`; label each sample with what tells two instances
/// apart (the plugin's manifest name). A sample whose name or label name is not a valid
/// Prometheus name is left out.
public protocol MetricsReporting: Sendable {
    /// The samples as they are now.
    func metricSamples() -> [MetricSample]
}

/// One number of a ``MetricsReporting`` service (PlugboardAPI 1.6).
public struct MetricSample: Sendable, Hashable {
    /// How Prometheus treats the number.
    public enum Kind: String, Sendable, Hashable {
        /// Only goes up (until the process restarts).
        case counter
        /// Goes up and down.
        case gauge
    }

    /// The metric's name, `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public var name: String
    /// One sentence for `# HELP`; samples of one name share the first one's.
    public var help: String
    public var kind: Kind
    /// Label names and values; names as metric names (without `:`).
    public var labels: [String: String]
    public var value: Double

    public init(name: String, help: String, kind: Kind, labels: [String: String] = [:], value: Double) {
        self.name = name
        self.help = help
        self.kind = kind
        self.labels = labels
        self.value = value
    }
}
