import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

/// Where a multipart upload lives in the bound storage, so that it lives in the backend
/// and swaps with it (after a swap, the new storage answers `NoSuchUpload`):
///
/// - `_plugboard-s3/uploads/<bucket>/<uploadId>/upload`: the upload's record
///   (``MultipartRecord``): key, content type, metadata, initiator, initiated time.
/// - `_plugboard-s3/uploads/<bucket>/<uploadId>/part-00001` ... `part-10000`: each
///   part's bytes; the storage's ETag of a part is its MD5, which UploadPart answers.
/// - `_plugboard-s3/uploads/<bucket>/<uploadId>/completion`: the claim of the one
///   CompleteMultipartUpload allowed to store the object, written create-only: the
///   object's manifest as known before it is stored (``MultipartManifest/claimText``), so
///   its multipart ETag, and its layout should the server stop before the manifest.
/// - `_plugboard-s3/parts/<bucket>/<key>`: the manifest of an object completed from parts
///   (``MultipartManifest``): its part sizes, for GetObject with `?partNumber=`. A key too
///   long for that prefix has its manifest at `_plugboard-s3/parts-hashed/<bucket>/<md5 of the key>`.
///
/// `<bucket>` is in every path, so that DeleteBucket can abort the bucket's uploads in
/// progress by listing ``uploadsPrefix(bucket:)``, and remove its manifests with
/// ``manifestPrefixes(bucket:)``.
public enum MultipartLayout {
    public static let partsPrefix = S3Namespace.reservedPrefix + "parts/"
    public static let hashedPartsPrefix = S3Namespace.reservedPrefix + "parts-hashed/"
    static let recordName = "upload"
    static let partNamePrefix = "part-"
    public static let maxPartNumber = 10_000
    /// The largest part S3 takes in one UploadPart: 5 GiB.
    public static let maxPartSize = 5 * 1024 * 1024 * 1024

    /// `_plugboard-s3/uploads/<bucket>/`: every upload in progress in the bucket.
    public static func uploadsPrefix(bucket: String) -> String { S3Namespace.uploadsPrefix + bucket + "/" }

    static func folder(bucket: String, uploadID: String) -> String { uploadsPrefix(bucket: bucket) + uploadID + "/" }
    static func recordKey(bucket: String, uploadID: String) -> String { folder(bucket: bucket, uploadID: uploadID) + recordName }
    static let completionName = "completion"
    static func completionKey(bucket: String, uploadID: String) -> String { folder(bucket: bucket, uploadID: uploadID) + completionName }

    /// `part-00042`: five digits, so that the storage's byte order is the parts' order.
    static func partKey(bucket: String, uploadID: String, partNumber: Int) -> String {
        let digits = String(partNumber)
        return folder(bucket: bucket, uploadID: uploadID) + partNamePrefix + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// The part number of a storage key inside an upload's folder (`part-00042` gives 42),
    /// nil for anything else (the record).
    static func partNumber(ofName name: Substring) -> Int? {
        guard name.hasPrefix(partNamePrefix) else { return nil }
        let digits = name.dropFirst(partNamePrefix.count)
        guard digits.utf8.count == 5, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(digits),
              (1...maxPartNumber).contains(number) else { return nil }
        return number
    }

    public static let checksumsPrefix = S3Namespace.reservedPrefix + "checksums/"
    public static let hashedChecksumsPrefix = S3Namespace.reservedPrefix + "checksums-hashed/"

    /// Where the manifest of `key` in `bucket` is kept; the manifest names its key, so a
    /// hashed path that two keys share is never taken for the other's.
    public static func manifestKey(bucket: String, key: String) -> String {
        besideKey(partsPrefix, hashed: hashedPartsPrefix, bucket: bucket, key: key)
    }

    /// Where the checksum record of `key` in `bucket` is kept (``S3ChecksumRecord``; it
    /// names the storage ETag it describes).
    public static func checksumKey(bucket: String, key: String) -> String {
        besideKey(checksumsPrefix, hashed: hashedChecksumsPrefix, bucket: bucket, key: key)
    }

    /// `<prefix><bucket>/<key>`, or, for a key too long for it, `<hashed><bucket>/<md5 of the key>`.
    private static func besideKey(_ prefix: String, hashed: String, bucket: String, key: String) -> String {
        let direct = prefix + bucket + "/" + key
        if direct.utf8.count <= ObjectKey.maxByteCount { return direct }
        let digest = (try? MD5Hasher.hash(Array(key.utf8))).map { Hex.encode($0) } ?? "unhashable"
        return hashed + bucket + "/" + digest
    }

    /// The prefixes under which the bucket's manifests and checksum records live.
    public static func manifestPrefixes(bucket: String) -> [String] {
        [partsPrefix, hashedPartsPrefix, checksumsPrefix, hashedChecksumsPrefix].map { $0 + bucket + "/" }
    }

    /// Where a part's checksum record is kept, beside the part: `checksum-00042`.
    static func partChecksumKey(bucket: String, uploadID: String, partNumber: Int) -> String {
        let digits = String(partNumber)
        return folder(bucket: bucket, uploadID: uploadID) + "checksum-" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// A new upload ID: 32 lowercase hex digits (128 random bits), URL-safe.
    static func newUploadID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Hex.encode(bytes)
    }

    /// Whether `id` has the shape of the IDs this server hands out; any other is
    /// `NoSuchUpload` before it comes near a storage key.
    static func isUploadID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// Text fields of the records and manifests: every byte outside `[A-Za-z0-9._~/-]` as
/// `%XX`, so that any key or value fits on one line with no spaces.
enum MultipartText {
    static func encode(_ text: String, keepSlash: Bool = true) -> String {
        PercentEncoding.encode(text, keepingSlashes: keepSlash)
    }

    /// The text `encode` wrote; nil for a bad escape or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? { PercentEncoding.decodedText(text) }

    /// The lines of a record as (field, rest) pairs, after checking its first line.
    static func fields(_ content: [UInt8], header: String) -> [(String, [Substring])]? {
        guard let text = String(validating: content, as: UTF8.self) else { return nil }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard let first = lines.first, first == header else { return nil }
        lines.removeFirst()
        var out: [(String, [Substring])] = []
        for line in lines {
            let words = line.split(separator: " ", omittingEmptySubsequences: false)
            guard let name = words.first, !name.isEmpty else { return nil }
            out.append((String(name), Array(words.dropFirst())))
        }
        return out
    }
}
