extension ObjectStorageConformance {
    /// Thrown by ``Report/requireAllPassed()``: at least one rule failed.
    public struct Failure: Error, CustomStringConvertible {
        /// The whole report.
        public let report: Report

        /// `n of m ObjectStorage conformance rules failed:` and each failed rule with its
        /// reason.
        public var description: String {
            let failures = report.failures
            var lines = ["\(failures.count) of \(report.results.count) ObjectStorage conformance rules failed:"]
            for failure in failures {
                lines.append("  \(failure)")
            }
            if let note = ObjectStorageConformance.prefixNote(for: failures) { lines.append(note) }
            return lines.joined(separator: "\n")
        }
    }
}
