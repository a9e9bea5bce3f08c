import PlugboardAPI
@testable import PlugboardServer
import Testing

/// Samples of a `MetricsReporting` provider in `/metrics` (PlugboardAPI 1.6).
@Suite struct PluginMetricsTests {
    @Test func samples_areGroupedByName_escaped_andInvalidNamesLeftOut() {
        let text = ServerMetrics.renderSamples([
            MetricSample(name: "plugboard_x_total", help: "Things.\nDone.", kind: .counter, labels: ["plugin": "A\"b"], value: 2),
            MetricSample(name: "plugboard_y", help: "Level.", kind: .gauge, value: 0.5),
            MetricSample(name: "plugboard_x_total", help: "ignored", kind: .counter, labels: ["plugin": "C", "at": "z"], value: 3),
            MetricSample(name: "9bad", help: "no", kind: .gauge, value: 1),
            MetricSample(name: "plugboard_z", help: "no", kind: .gauge, labels: ["bad-label": "v"], value: 1),
        ])
        #expect(text == """
            # HELP plugboard_x_total Things. Done.
            # TYPE plugboard_x_total counter
            plugboard_x_total{plugin="A\\"b"} 2
            plugboard_x_total{at="z",plugin="C"} 3
            # HELP plugboard_y Level.
            # TYPE plugboard_y gauge
            plugboard_y 0.5

            """)
    }

    final class Counting: MetricsReporting, @unchecked Sendable {
        // @unchecked Sendable: the test changes `count` between scrapes, on one task.
        var count: Double
        init(_ count: Double) { self.count = count }
        func metricSamples() -> [MetricSample] {
            [MetricSample(name: "plugboard_p_requests_total", help: "Requests.", kind: .counter, labels: ["plugin": "P"], value: count),
             MetricSample(name: "plugboard_p_open", help: "Open.", kind: .gauge, labels: ["plugin": "P"], value: count)]
        }
    }

    struct Plain: MetricsReporting {
        var count: Double
        func metricSamples() -> [MetricSample] {
            [MetricSample(name: "plugboard_q_total", help: "Q.", kind: .counter, value: count)]
        }
    }

    static func value(_ samples: [MetricSample], _ name: String) -> Double? { samples.first { $0.name == name }?.value }

    /// A reload builds a new instance whose counters start at zero: the host answers each
    /// counter series as the new instance's value plus the old one's final count (what it
    /// counted after the last scrape, while draining, included); gauges as they are.
    @Test func aCounter_continuesAcrossANewInstance_gaugesDoNot() {
        let counters = PluginCounters()
        let first = Counting(5)
        #expect(Self.value(counters.samples([first]), "plugboard_p_requests_total") == 5)
        first.count = 6 // a request that finished after the scrape, before the swap
        let second = Counting(2)
        let after = counters.samples([second])
        #expect(Self.value(after, "plugboard_p_requests_total") == 8)
        #expect(Self.value(after, "plugboard_p_open") == 2)
        second.count = 3
        #expect(Self.value(counters.samples([second]), "plugboard_p_requests_total") == 9)
        let third = Counting(0)
        #expect(Self.value(counters.samples([third]), "plugboard_p_requests_total") == 9)

        // A value type has no identity: a counter that went down is a new instance.
        let plain = PluginCounters()
        #expect(Self.value(plain.samples([Plain(count: 4)]), "plugboard_q_total") == 4)
        #expect(Self.value(plain.samples([Plain(count: 1)]), "plugboard_q_total") == 5)
        #expect(Self.value(plain.samples([Plain(count: 7)]), "plugboard_q_total") == 11)

        // Two providers with one series at once: answered as each reports it.
        let both = PluginCounters()
        for _ in 0..<3 {
            #expect(both.samples([Counting(5), Counting(2)]).filter { $0.kind == .counter }.map(\.value) == [5, 2])
        }
    }
}
