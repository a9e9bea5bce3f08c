// Beside the record rather than in Manifest/SecretScrubber.swift: the manifest's files
// know nothing of the host's records, which keeps them buildable alone (the fuzz target).
extension SecretScrubber {
    /// `record` with the texts its plugin gave scrubbed: its error and its version.
    public func scrub(_ record: PluginRecord) -> PluginRecord {
        guard !isEmpty else { return record }
        var out = record
        out.error = record.error.map { scrub($0) }
        out.version = scrub(record.version)
        return out
    }
}
