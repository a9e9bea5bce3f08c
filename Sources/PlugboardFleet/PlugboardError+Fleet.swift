import PlugboardAPI

// The fleet's codes (docs/ERRORS.md, "fleet"; docs/FLEET.md); `fleet.url_invalid` is
// PlugboardEtcd's, beside the URL it reads.
extension PlugboardError.Code {
    /// The fleet's store (etcd) could not be reached or refused a request.
    public static let fleetStoreFailed: Self = "fleet.store_failed"
    /// A record under the fleet's prefix is not the JSON docs/FLEET.md describes.
    public static let fleetRecordInvalid: Self = "fleet.record_invalid"
    /// A desired digest names no manifest under `manifests/`, or the bytes stored there
    /// hash to another digest.
    public static let fleetManifestMissing: Self = "fleet.manifest_missing"
    /// Another rollout holds the lock: `fleet set` and `fleet rollout` wait for it.
    public static let fleetRolloutInProgress: Self = "fleet.rollout_in_progress"
    /// A rollout needs a stable manifest to roll back to, and live hosts to roll out to.
    public static let fleetNothingToRollOut: Self = "fleet.nothing_to_roll_out"
    /// `fleet set` found hosts on targets that no live rollout owns (its controller died
    /// and its lock lapsed): they would not take the new stable manifest.
    public static let fleetRolloutOrphaned: Self = "fleet.rollout_orphaned"
    /// `fleet set` or `fleet rollout` ran the manifest's preflight where it runs, and a
    /// reload to it would be refused: nothing was written.
    public static let fleetPreflightRefused: Self = "fleet.preflight_refused"
    /// `fleet rollout --abort` found no rollout running.
    public static let fleetNoRollout: Self = "fleet.no_rollout"
    /// The host's local state folder (its copy of the last applied manifest) could not be
    /// read or written.
    public static let fleetLocalCopyFailed: Self = "fleet.local_copy_failed"
    /// `--waves` is not a list of counts and percentages that grows.
    public static let fleetWavesInvalid: Self = "fleet.waves_invalid"
}
