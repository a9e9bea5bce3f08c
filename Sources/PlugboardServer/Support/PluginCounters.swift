import PlugboardAPI
import PlugboardConcurrency

/// Keeps the counters of the plugins' `MetricsReporting` samples going up across reloads.
///
/// A reload builds a new instance of a plugin's service, whose counters start at zero; a
/// dashboard that shows a counter (not only its rate) would see it fall. So `/metrics`
/// answers each counter series (a name and its labels) as the current instance's value
/// plus what the instances before it had counted when they were replaced. A class
/// instance is known by its identity: when a series comes from another instance than
/// the last scrape's, the old one (kept until then) is asked once more for its final
/// value, so what it counted after that scrape, while its last requests drained, is
/// kept too. A value type has no identity: a series whose value went down is taken for
/// a new instance and its last value carried, as Prometheus reads a counter reset. A
/// series two providers report at once (labels that do not tell them apart) is answered
/// as each reports it, carrying nothing. Gauges are answered as they are.
final class PluginCounters: Sendable {
    /// The instance a series came from at the last scrape: kept, so that it can be asked
    /// for its final value once it has been replaced.
    private struct Source: @unchecked Sendable {
        // @unchecked Sendable: `object` is only compared by identity, and `reporter` is
        // Sendable (MetricsReporting refines it); the pair is one value kept together.
        let object: AnyObject?
        let reporter: any MetricsReporting
    }

    private struct Series {
        var carried: Double = 0
        var last: Double = 0
        var source: Source?
    }

    /// Held while a scrape reads the reporters: two scrapes at once must not both carry
    /// one replaced instance's count.
    private let series = LockedValueBox([String: Series]())

    /// The samples of `reporters`, each counter continued across the instances before.
    func samples(_ reporters: [any MetricsReporting]) -> [MetricSample] {
        series.withLock { all in
            let taken = reporters.map { reporter in
                (Source(object: type(of: reporter) is AnyObject.Type ? reporter as AnyObject : nil, reporter: reporter),
                 reporter.metricSamples())
            }
            var count: [String: Int] = [:]
            for (_, samples) in taken {
                for sample in samples where sample.kind == .counter { count[Self.key(sample), default: 0] += 1 }
            }
            var out: [MetricSample] = []
            for (source, samples) in taken {
                for var sample in samples {
                    let key = Self.key(sample)
                    guard sample.kind == .counter, count[key] == 1 else { out.append(sample); continue }
                    var s = all[key] ?? Series()
                    if let old = s.source {
                        if let before = old.object, before !== source.object {
                            let final = old.reporter.metricSamples().first { Self.key($0) == key }?.value ?? s.last
                            s.carried += max(final, s.last)
                        } else if old.object == nil, sample.value < s.last {
                            s.carried += s.last
                        }
                    }
                    s.last = sample.value
                    s.source = source
                    all[key] = s
                    sample.value += s.carried
                    out.append(sample)
                }
            }
            return out
        }
    }

    /// A series: the name and its labels, in label order.
    private static func key(_ sample: MetricSample) -> String {
        sample.name + "{" + sample.labels.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }.joined(separator: "\u{0}") + "}"
    }
}
