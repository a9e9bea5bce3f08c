import PlugboardAPI
import PlugboardConcurrency
import PlugboardHTTP
import PlugboardHost

/// The counters behind `GET /metrics`, in Prometheus' text format (version 0.0.4).
public final class ServerMetrics: Sendable {
    private struct RequestKey: Hashable { var route: String; var method: String; var status: Int }
    /// Counted under integer keys (route, method and status packed in one Int) and
    /// histograms by route number: every answer records here, and hashing label strings
    /// under the lock showed in the benchmark profile. Labels are made at render time.
    /// The statuses most answers have are counted in a flat array (hashing even an Int
    /// key showed in the profile of a small GET); any other status in a dictionary.
    private struct State {
        var common = [Int](repeating: 0, count: Route.labels.count * (ServerMetrics.methods.count + 1)
                                                * ServerMetrics.commonStatuses.count)
        var requests: [Int: Int] = [:]
        var latency = [LatencyHistogram?](repeating: nil, count: Route.labels.count)
    }
    private let state = LockedValueBox(State())
    /// The plugins' counters, continued across reloads.
    private let pluginCounters = PluginCounters()

    public init() {}

    func record(route: Int, method: String, status: Int, seconds: Double) {
        let methodIndex = Self.methods.firstIndex(of: method) ?? Self.methods.count
        let key = (route << 24) | (methodIndex << 16) | (status & 0xFFFF)
        let slot = Self.commonSlot(status).map { (route * (Self.methods.count + 1) + methodIndex) * Self.commonStatuses.count + $0 }
        state.withLock { s in
            if let slot { s.common[slot] += 1 } else { s.requests[key, default: 0] += 1 }
            // In place: a copy taken out and stored back shares its buckets with the one
            // still in the array, so recording into it copied them, once an answer.
            if s.latency[route] == nil { s.latency[route] = LatencyHistogram() }
            s.latency[route]!.record(seconds: seconds)
        }
    }

    /// Object requests answered (the object and listing routes), and how many of them
    /// with a status of 500 or above: what a fleet host reports as its error rate.
    public func objectTotals() -> (requests: Int, errors: Int) {
        let objectRoutes = [Route.labelIndex("object"), Route.labelIndex("listing")].compactMap { $0 }
        let all = state.withLock { Self.allRequests($0) }
        var requests = 0, errors = 0
        for (packed, count) in all where objectRoutes.contains(packed >> 24) {
            requests += count
            if packed & 0xFFFF >= 500 { errors += count }
        }
        return (requests, errors)
    }

    /// Known methods keep their name as a label; anything else is `other`, so that a
    /// client cannot grow the label set without bound.
    private static let methods: [String] = ["GET", "HEAD", "PUT", "DELETE", "POST", "PATCH", "OPTIONS"]

    private static let commonStatuses = [200, 204, 206, 304, 404, 412]

    private static func commonSlot(_ status: Int) -> Int? { commonStatuses.firstIndex(of: status) }

    /// Every count, under the packed key ``record(route:method:status:seconds:)`` makes.
    private static func allRequests(_ s: State) -> [Int: Int] {
        var all = s.requests
        let statuses = commonStatuses.count, methodSlots = methods.count + 1
        for (slot, count) in s.common.enumerated() where count > 0 {
            let route = slot / (methodSlots * statuses), method = slot / statuses % methodSlots
            all[(route << 24) | (method << 16) | commonStatuses[slot % statuses], default: 0] += count
        }
        return all
    }

    private static func requestKey(_ packed: Int) -> RequestKey {
        let method = (packed >> 16) & 0xFF
        return RequestKey(route: Route.labels[packed >> 24], method: method < methods.count ? methods[method] : "other",
                          status: packed & 0xFFFF)
    }

    /// The exposition: HTTP counters and latency, open connections, and the plugins.
    func render(plugins: [PluginRecord], openConnections: Int) -> String {
        let s = state.withLock { $0 }
        var out = "# HELP plugboard_http_requests_total HTTP requests answered, by route, method and status.\n"
        out += "# TYPE plugboard_http_requests_total counter\n"
        let requests = Self.allRequests(s).map { (key: Self.requestKey($0.key), value: $0.value) }
        for (k, v) in requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            out += "plugboard_http_requests_total{route=\"\(k.route)\",method=\"\(k.method)\",status=\"\(k.status)\"} \(v)\n"
        }
        out += "# HELP plugboard_http_request_duration_seconds Time from a request's first byte to its answer written.\n"
        out += "# TYPE plugboard_http_request_duration_seconds histogram\n"
        let latency = s.latency.enumerated().compactMap { i, h in h.map { (key: Route.labels[i], value: $0) } }
        for (route, h) in latency.sorted(by: { $0.key < $1.key }) {
            out += h.render("plugboard_http_request_duration_seconds", label: "route=\"\(route)\"")
        }
        out += "# HELP plugboard_http_connections_open Client connections open now.\n"
        out += "# TYPE plugboard_http_connections_open gauge\n"
        out += "plugboard_http_connections_open \(openConnections)\n"
        out += "# HELP plugboard_plugin_state 1 for each plugin's current state.\n"
        out += "# TYPE plugboard_plugin_state gauge\n"
        for r in plugins {
            out += "plugboard_plugin_state{plugin=\"\(Self.escape(r.name))\",state=\"\(r.state)\"} 1\n"
        }
        let attempted = plugins.filter { [.active, .failed, .rejected].contains($0.state) }
        out += "# HELP plugboard_plugin_loads_total Plugin loads attempted.\n"
        out += "# TYPE plugboard_plugin_loads_total counter\n"
        out += "plugboard_plugin_loads_total \(attempted.count)\n"
        out += "# HELP plugboard_plugin_load_failures_total Plugin loads that failed or were rejected, by outcome.\n"
        out += "# TYPE plugboard_plugin_load_failures_total counter\n"
        for state in [PluginState.failed, .rejected] {
            out += "plugboard_plugin_load_failures_total{state=\"\(state)\"} \(plugins.filter { $0.state == state }.count)\n"
        }
        // A crash of an isolated plugin's worker counts in the error figures a fleet's
        // rollout bakes against, beside the answers it failed.
        out += "# HELP plugboard_plugin_restarts_total Worker processes of isolated plugins replaced, by plugin and reason.\n"
        out += "# TYPE plugboard_plugin_restarts_total counter\n"
        for r in plugins {
            guard let worker = r.worker else { continue }
            for (reason, count) in worker.restarts.sorted(by: { $0.key < $1.key }) {
                out += "plugboard_plugin_restarts_total{plugin=\"\(Self.escape(r.name))\",reason=\"\(reason)\"} \(count)\n"
            }
        }
        return out
    }

    /// Hot swap's figures, named as Prometheus and Caddy name their reload metrics.
    static func renderHotSwap(_ host: PluginHost) -> String {
        let s = host.reloads.snapshot
        var out = "# HELP plugboard_reloads_total Reloads of the manifest, by result.\n"
        out += "# TYPE plugboard_reloads_total counter\n"
        out += "plugboard_reloads_total{result=\"applied\"} \(s.applied)\n"
        out += "plugboard_reloads_total{result=\"unchanged\"} \(s.unchanged)\n"
        out += "plugboard_reloads_total{result=\"refused\"} \(s.refused)\n"
        out += "# HELP plugboard_config_last_reload_successful Whether the last reload that changed something succeeded (1 at start).\n"
        out += "# TYPE plugboard_config_last_reload_successful gauge\n"
        out += "plugboard_config_last_reload_successful \(s.lastSuccessful ? 1 : 0)\n"
        out += "# HELP plugboard_config_last_reload_success_timestamp_seconds When the configuration last loaded successfully.\n"
        out += "# TYPE plugboard_config_last_reload_success_timestamp_seconds gauge\n"
        out += "plugboard_config_last_reload_success_timestamp_seconds \(s.lastSuccessTimestamp)\n"
        out += "# HELP plugboard_reload_duration_seconds Time from a reload's start to its outcome.\n"
        out += "# TYPE plugboard_reload_duration_seconds histogram\n"
        for (i, bound) in ReloadStatistics.bounds.enumerated() {
            out += "plugboard_reload_duration_seconds_bucket{le=\"\(bound)\"} \(s.durationCounts[i])\n"
        }
        out += "plugboard_reload_duration_seconds_bucket{le=\"+Inf\"} \(s.durationCount)\n"
        out += "plugboard_reload_duration_seconds_sum \(s.durationSum)\n"
        out += "plugboard_reload_duration_seconds_count \(s.durationCount)\n"
        out += "# HELP plugboard_generation The container generation new requests see.\n"
        out += "# TYPE plugboard_generation gauge\n"
        out += "plugboard_generation \(host.container.generation)\n"
        out += "# HELP plugboard_mapped_images Plugin images mapped in this process (never unmapped).\n"
        out += "# TYPE plugboard_mapped_images gauge\n"
        out += "plugboard_mapped_images \(MappedImages.shared.count)\n"
        out += "# HELP plugboard_mapped_image_bytes Bytes of the plugin images mapped in this process.\n"
        out += "# TYPE plugboard_mapped_image_bytes gauge\n"
        out += "plugboard_mapped_image_bytes \(MappedImages.shared.totalBytes)\n"
        return out
    }

    /// The samples of every provider of `ObjectStorage` that adopts `MetricsReporting`
    /// (PlugboardAPI 1.6), grouped by name, counters continued across reloads
    /// (``PluginCounters``); a sample with an invalid name is left out.
    func renderPluginSamples(_ host: PluginHost) -> String {
        let providers = (try? host.container.resolveAll((any ObjectStorage).self)) ?? []
        return Self.renderSamples(pluginCounters.samples(providers.compactMap { $0 as? any MetricsReporting }))
    }

    static func renderSamples(_ samples: [MetricSample]) -> String {
        var out = ""
        var described: Set<String> = []
        let valid = samples.filter { Self.isName($0.name, colons: true) && $0.labels.keys.allSatisfy { Self.isName($0, colons: false) } }
        for name in valid.map(\.name).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            for sample in valid where sample.name == name {
                if described.insert(name).inserted {
                    out += "# HELP \(name) \(sample.help.replacingNewlines)\n# TYPE \(name) \(sample.kind.rawValue)\n"
                }
                let labels = sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escape($0.value))\"" }
                let value = sample.value
                // Whole numbers as the host's own counters print them.
                let text = value.rounded() == value && abs(value) < 9_007_199_254_740_992 ? String(Int(value)) : "\(value)"
                out += name + (labels.isEmpty ? "" : "{\(labels.joined(separator: ","))}") + " \(text)\n"
            }
        }
        return out
    }

    private static func isName(_ name: String, colons: Bool) -> Bool {
        guard let first = name.utf8.first, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { b in
            (0x61...0x7A).contains(b) || (0x41...0x5A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F || (colons && b == 0x3A)
        }
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}

extension String {
    /// HELP text on one line.
    fileprivate var replacingNewlines: String { split(whereSeparator: \.isNewline).joined(separator: " ") }
}
