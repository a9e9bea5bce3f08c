import PlugboardAPI

/// Where the S3 front end keeps things in the bound `ObjectStorage`, so that buckets,
/// their objects and uploads in progress live in the backend and swap with it.
///
/// - An object `key` of bucket `b` is the storage object `b/key`.
/// - Bucket `b` exists while the marker object `_plugboard-s3/buckets/b` exists.
/// - Multipart uploads in progress live under `_plugboard-s3/uploads/`.
///
/// `_` cannot begin a bucket name (S3's rules: lower-case letters, digits, `.` and `-`,
/// starting and ending with a letter or digit), so no bucket's objects can collide with
/// the reserved prefix.
public enum S3Namespace {
    /// One place for the prefix: layers find it in the API (`StorageCall.frontEndPrefix`).
    public static let reservedPrefix = StorageCall.frontEndPrefix
    public static let bucketMarkerPrefix = reservedPrefix + "buckets/"
    public static let uploadsPrefix = reservedPrefix + "uploads/"

    /// Metadata keys the front end keeps with an object for itself; never answered as
    /// `x-amz-meta-*`. (The storage's metadata keys are `[a-z0-9-]`.)
    public static let reservedMetadataPrefix = "plugboard-s3-"
    /// The multipart ETag (`"<md5 of the parts' md5s>-N"` without quotes) of an object
    /// completed from parts; S3 answers it instead of the storage's ETag.
    public static let multipartETagKey = "plugboard-s3-etag"
    /// The upload an object was completed from: a CompleteMultipartUpload repeated (a
    /// client that lost the answer, or a crash before the upload's clean-up) finds its
    /// own object by it and answers as the first did.
    public static let uploadIDKey = "plugboard-s3-upload"

    public static func objectKey(bucket: String, key: String) -> String { bucket + "/" + key }
    public static func bucketPrefix(_ bucket: String) -> String { bucket + "/" }
    public static func markerKey(bucket: String) -> String { bucketMarkerPrefix + bucket }

    /// The bytes an S3 key may have here: the storage holds at most
    /// ``ObjectKey/maxByteCount`` bytes for `bucket/key` together.
    public static func maxKeyBytes(bucket: String) -> Int { ObjectKey.maxByteCount - bucket.utf8.count - 1 }

    /// Names AWS reserves at the start and the end of a bucket's name (its general purpose
    /// bucket naming rules): not for new buckets.
    static let reservedNamePrefixes = ["xn--", "sthree-", "amzn-s3-demo-"]
    static let reservedNameSuffixes = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]

    /// Checks a bucket name by S3's naming rules; throws `InvalidBucketName` saying which
    /// rule failed. Every name: 3-63 characters, lower-case letters, digits, `.` and `-`, a
    /// letter or digit at both ends, no `..`, not an IPv4 address. A new bucket's name
    /// (`creating`) also must not begin or end as AWS reserves (`xn--`, `-s3alias`, ...);
    /// a bucket made under an earlier, looser rule stays reachable.
    public static func validateBucketName(_ name: String, creating: Bool = true) throws(S3Error) {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else {
            throw .invalidBucketName(name, "expected 3 to 63 characters, found \(bytes.count).")
        }
        func isLetterOrDigit(_ b: UInt8) -> Bool { (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) }
        for b in bytes where !(isLetterOrDigit(b) || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")) {
            throw .invalidBucketName(name, "expected only lower-case letters, digits, '.' and '-', found \"\(String(decoding: [b], as: UTF8.self))\".")
        }
        guard isLetterOrDigit(bytes[0]), isLetterOrDigit(bytes[bytes.count - 1]) else {
            throw .invalidBucketName(name, "expected a letter or digit at the start and the end.")
        }
        // By byte: the name is ASCII here, and every request that names a bucket is checked.
        var periods = 0
        for i in bytes.indices where bytes[i] == UInt8(ascii: ".") {
            if i > 0, bytes[i - 1] == UInt8(ascii: ".") { throw .invalidBucketName(name, "expected no two adjacent periods.") }
            periods += 1
        }
        if periods == 3, name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ UInt8($0) != nil }) {
            throw .invalidBucketName(name, "expected a name, found an IP address.")
        }
        guard creating else { return }
        if let prefix = reservedNamePrefixes.first(where: { name.hasPrefix($0) }) {
            throw .invalidBucketName(name, "expected a name that does not begin with \"\(prefix)\", which AWS reserves.")
        }
        if let suffix = reservedNameSuffixes.first(where: { name.hasSuffix($0) }) {
            throw .invalidBucketName(name, "expected a name that does not end with \"\(suffix)\", which AWS reserves.")
        }
    }
}
