import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

/// The manifest of an object completed from parts, at ``MultipartLayout/manifestKey(bucket:key:)``:
/// the object's key, its storage ETag when completed, its multipart ETag and each part's
/// size, in order. It holds only while the object's storage ETag is still `etag` (a plain
/// PUT over the object leaves it stale: ignored, and removed when seen).
///
/// ```
/// plugboard-s3-parts 1
/// key photos/big.iso
/// etag 9e107d9d372bb6826bd81d3542a419d6
/// multipart-etag 0c78aef83f66abc1fa1e8477f296d394-3
/// part 5242880
/// part 5242880
/// part 1024
/// ```
///
/// The completion claim (``MultipartOperations/claimCompletion``) is this manifest as it
/// is known before the object is stored (``claimText``: `etag -`, and the object's
/// checksum as `checksum`), so that a server killed between storing the object and
/// writing its manifest leaves the layout in the claim, which outlives the object's
/// landing until the upload's clean-up, and the clean-up writes the manifest first.
struct MultipartManifest: Sendable, Equatable {
    static let header = "plugboard-s3-parts 1"
    /// The storage ETag a claim names: none is known before the object is stored.
    static let unstoredETag = "-"
    /// The most a manifest or claim may hold (10,000 parts with their checksums).
    static let maxBytes = 1024 * 1024

    var key: String
    var etag: String
    var multipartETag: String
    var sizes: [Int]
    /// Each part's checksum, in order, when the upload kept them (GetObjectAttributes
    /// answers them); empty otherwise.
    var checksums: [S3Checksum] = []
    /// The object's own checksum, in a claim only: a checksum the object's metadata had no
    /// room for is kept in a record after the object, which a restored manifest rewrites.
    var objectChecksum: S3Checksum?

    func encoded() -> [UInt8] {
        var text = Self.header + "\n"
        text += "key " + MultipartText.encode(key) + "\n"
        text += "etag " + etag + "\n"
        text += "multipart-etag " + multipartETag + "\n"
        for size in sizes { text += "part \(size)\n" }
        for checksum in checksums { text += "part-checksum " + checksum.stored + "\n" }
        if let objectChecksum { text += "checksum " + objectChecksum.stored + "\n" }
        return Array(text.utf8)
    }

    /// The completion claim's text for this layout, written before the object is stored.
    var claimText: [UInt8] {
        var claim = self
        claim.etag = Self.unstoredETag
        return claim.encoded()
    }

    /// The multipart ETag a completion claim names: a claim is a manifest, or, written
    /// by an earlier build, the multipart ETag alone.
    static func claimedETag(_ content: [UInt8]) -> String {
        MultipartManifest(parsing: content)?.multipartETag ?? String(decoding: content, as: UTF8.self)
    }

    init(key: String, etag: String, multipartETag: String, sizes: [Int], checksums: [S3Checksum] = []) {
        self.key = key
        self.etag = etag
        self.multipartETag = multipartETag
        self.sizes = sizes
        self.checksums = checksums
    }

    init?(parsing content: [UInt8]) {
        guard let fields = MultipartText.fields(content, header: Self.header) else { return nil }
        var key: String?
        var etag: String?
        var multipartETag: String?
        var sizes: [Int] = []
        var checksums: [S3Checksum] = []
        var objectChecksum: S3Checksum?
        for (name, values) in fields {
            switch name {
            case "checksum":
                guard let checksum = S3Checksum(stored: values.joined(separator: " ")) else { return nil }
                objectChecksum = checksum
            case "part-checksum":
                guard let checksum = S3Checksum(stored: values.joined(separator: " ")) else { return nil }
                checksums.append(checksum)
            case "key":
                guard values.count == 1, let value = MultipartText.decode(values[0]) else { return nil }
                key = value
            case "etag":
                guard values.count == 1 else { return nil }
                etag = String(values[0])
            case "multipart-etag":
                guard values.count == 1 else { return nil }
                multipartETag = String(values[0])
            case "part":
                guard values.count == 1, let size = Int(values[0]), size >= 0 else { return nil }
                sizes.append(size)
            default:
                continue
            }
        }
        guard let key, let etag, let multipartETag, !sizes.isEmpty, sizes.count <= MultipartLayout.maxPartNumber,
              checksums.isEmpty || checksums.count == sizes.count else { return nil }
        self.init(key: key, etag: etag, multipartETag: multipartETag, sizes: sizes, checksums: checksums)
        self.objectChecksum = objectChecksum
    }

    /// Whether the manifest describes `info` as it is now: the same key bytes, storage
    /// ETag, multipart ETag and total size.
    func describes(_ info: ObjectInfo, key objectKey: String) -> Bool {
        Array(key.utf8) == Array(objectKey.utf8) && etag == info.etag
            && info.metadata[S3Namespace.multipartETagKey] == multipartETag
            && sizes.reduce(0, +) == info.size
    }
}
