/// A request-duration histogram in Prometheus' form, with one set of bounds for every
/// API the server answers (native and S3), so their figures compare bucket by bucket.
public struct LatencyHistogram: Sendable {
    /// Upper bounds of the buckets, in seconds.
    public static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private var buckets = [Int](repeating: 0, count: LatencyHistogram.bounds.count)
    private var count = 0
    private var sum = 0.0

    public init() {}

    public mutating func record(seconds: Double) {
        if let bucket = Self.bounds.firstIndex(where: { seconds <= $0 }) { buckets[bucket] += 1 }
        count += 1
        sum += seconds
    }

    /// The `_bucket`, `_sum` and `_count` lines of `name`, each with `label` (`route="/v1/objects"`).
    public func render(_ name: String, label: String) -> String {
        var out = ""
        var cumulative = 0
        for (i, bound) in Self.bounds.enumerated() {
            cumulative += buckets[i]
            out += "\(name)_bucket{\(label),le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(label),le=\"+Inf\"} \(count)\n"
        out += "\(name)_sum{\(label)} \(sum)\n"
        out += "\(name)_count{\(label)} \(count)\n"
        return out
    }
}
