import PlugboardTesting

/// Ceph RGW 16.2's own bugs, which fail a conformance rule for any client and which AWS S3
/// does not have, each checked with boto3 on the same gateway (`boto3_peer.py
/// rgw-limits`), so that its excuse disappears when RGW is fixed. Each is excused only in
/// its exact form; any other failure of the rule, and every failure of every other rule,
/// fails the RGW suite. moto's races (MotoRaces) are not excused here.
enum RGWBugs {
    /// What boto3 found the gateway gets wrong.
    struct Limits: Decodable {
        var quotedIfMatchWorks: Bool
        var unquotedIfMatchWorks: Bool
    }

    /// Whether the rule `name` failed with `reason` only by one of RGW's bugs.
    static func excuse(_ name: String, _ reason: String, limits: Limits) -> Bool {
        // RGW 16.2 compares a PutObject's If-Match with the stored ETag as written
        // (RGWRados::Object::Write's prepare_atomic_modification, strncmp), so the quoted
        // entity-tag S3 answers and S3Storage sends back never matches: 412, for boto3's
        // IfMatch too; the same tag unquoted matches. S3Storage keeps the quotes, which AWS
        // S3 documents. Excused only for the two puts that name the current ETag, refused
        // as a failed precondition, and only while boto3 sees the same.
        let grantedMatchRefused = [
            "put_matches_etag": "(condition matches the current etag) failed with storage.precondition_failed",
            "put_conditional_body_read_from_storage": "(condition matches and a body read from the same storage) failed with storage.precondition_failed",
        ]
        return grantedMatchRefused[name].map { reason.contains($0) } == true
            && !limits.quotedIfMatchWorks && limits.unquotedIfMatchWorks
    }
}
