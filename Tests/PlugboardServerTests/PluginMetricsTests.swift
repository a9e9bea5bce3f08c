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
}
