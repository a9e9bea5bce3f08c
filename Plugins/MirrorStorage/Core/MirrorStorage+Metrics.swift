import PlugboardAPI

/// The copier's progress in `/metrics`, labelled with the mirror's plugin name and both
/// backends' (PlugboardAPI 1.6).
extension MirrorStorage: MetricsReporting {
    public func metricSamples() -> [MetricSample] {
        let p = progress
        let labels = copier.labels
        func counter(_ name: String, _ help: String, _ value: Int) -> MetricSample {
            MetricSample(name: "plugboard_mirror_\(name)_total", help: help, kind: .counter, labels: labels, value: Double(value))
        }
        return [
            counter("objects_examined", "Objects of the old backend the mirror's copier looked at (the host continues the count across reloads).", p.examined),
            counter("objects_copied", "Objects the mirror's copier copied to the new backend.", p.copied),
            counter("objects_skipped", "Objects not copied: already in the new backend, written by a client, or gone.", p.skipped),
            counter("objects_failed", "Copies that failed (another pass follows).", p.failed),
            counter("bytes_copied", "Bytes the mirror's copier copied to the new backend.", p.bytesCopied),
            MetricSample(name: "plugboard_mirror_objects_examined_before", help: "Objects examined in earlier runs, from the checkpoint.",
                         kind: .gauge, labels: labels, value: Double(p.examinedBefore)),
            MetricSample(name: "plugboard_mirror_finished", help: "1 once every object of the old backend is in the new one: reload to drop it.",
                         kind: .gauge, labels: labels, value: p.finished ? 1 : 0),
        ]
    }
}
