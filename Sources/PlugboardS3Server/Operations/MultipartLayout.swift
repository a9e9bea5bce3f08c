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

/// An upload's record, the content of `.../<uploadId>/upload`: line-based text, one
/// field a line, values percent-encoded (``MultipartText``):
///
/// ```
/// plugboard-s3-upload 1
/// key photos/2026/a%20b.jpg
/// content-type image/jpeg
/// initiated 1796000000 123000000
/// initiator AKIAEXAMPLE
/// metadata color blue
/// ```
///
/// Unknown fields are skipped (a later version may add some); a record without its
/// first line, key or initiated time, or with a malformed line, is refused as damaged.
struct MultipartRecord: Sendable, Equatable {
    static let header = "plugboard-s3-upload 1"

    var key: String
    var contentType: String?
    var initiated: Timestamp
    var initiator: String
    /// The user's metadata and the stored headers, as the final object keeps them.
    var metadata: [String: String]
    /// The checksum CreateMultipartUpload asked for: every part carries one of the
    /// algorithm, and the object gets the parts' checksum of the type.
    var checksum: (algorithm: ChecksumAlgorithm, type: S3Checksum.Kind)?

    static func == (a: MultipartRecord, b: MultipartRecord) -> Bool {
        a.key == b.key && a.contentType == b.contentType && a.initiated == b.initiated && a.initiator == b.initiator
            && a.metadata == b.metadata && a.checksum?.algorithm == b.checksum?.algorithm && a.checksum?.type == b.checksum?.type
    }

    func encoded() -> [UInt8] {
        var text = Self.header + "\n"
        text += "key " + MultipartText.encode(key) + "\n"
        if let contentType { text += "content-type " + MultipartText.encode(contentType) + "\n" }
        text += "initiated \(initiated.seconds) \(initiated.nanoseconds)\n"
        text += "initiator " + MultipartText.encode(initiator) + "\n"
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            text += "metadata " + MultipartText.encode(name) + " " + MultipartText.encode(value) + "\n"
        }
        if let checksum { text += "checksum \(checksum.algorithm.rawValue) \(checksum.type.rawValue)\n" }
        return Array(text.utf8)
    }

    init(key: String, contentType: String?, initiated: Timestamp, initiator: String, metadata: [String: String],
         checksum: (algorithm: ChecksumAlgorithm, type: S3Checksum.Kind)? = nil) {
        self.key = key
        self.contentType = contentType
        self.initiated = initiated
        self.initiator = initiator
        self.metadata = metadata
        self.checksum = checksum
    }

    /// The record in `content`, nil when it is damaged.
    init?(parsing content: [UInt8]) {
        guard let fields = MultipartText.fields(content, header: Self.header) else { return nil }
        var key: String?
        var contentType: String?
        var initiated: Timestamp?
        var initiator = ""
        var metadata: [String: String] = [:]
        var checksum: (algorithm: ChecksumAlgorithm, type: S3Checksum.Kind)?
        for (name, values) in fields {
            switch name {
            case "checksum":
                guard values.count == 2, let algorithm = ChecksumAlgorithm(rawValue: String(values[0])),
                      let type = S3Checksum.Kind(rawValue: String(values[1])) else { return nil }
                checksum = (algorithm, type)
            case "key":
                guard values.count == 1, let value = MultipartText.decode(values[0]), !value.isEmpty else { return nil }
                key = value
            case "content-type":
                guard values.count == 1, let value = MultipartText.decode(values[0]) else { return nil }
                contentType = value
            case "initiated":
                guard values.count == 2, let seconds = Int64(values[0]), let nanos = Int32(values[1]),
                      (0..<1_000_000_000).contains(nanos) else { return nil }
                initiated = Timestamp(secondsSince1970: seconds, nanoseconds: nanos)
            case "initiator":
                guard values.count == 1, let value = MultipartText.decode(values[0]) else { return nil }
                initiator = value
            case "metadata":
                guard values.count == 2, let name = MultipartText.decode(values[0]), let value = MultipartText.decode(values[1]) else { return nil }
                metadata[name] = value
            default:
                continue
            }
        }
        guard let key, let initiated else { return nil }
        self.init(key: key, contentType: contentType, initiated: initiated, initiator: initiator, metadata: metadata, checksum: checksum)
    }
}

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
struct MultipartManifest: Sendable, Equatable {
    static let header = "plugboard-s3-parts 1"

    var key: String
    var etag: String
    var multipartETag: String
    var sizes: [Int]
    /// Each part's checksum, in order, when the upload kept them (GetObjectAttributes
    /// answers them); empty otherwise.
    var checksums: [S3Checksum] = []

    func encoded() -> [UInt8] {
        var text = Self.header + "\n"
        text += "key " + MultipartText.encode(key) + "\n"
        text += "etag " + etag + "\n"
        text += "multipart-etag " + multipartETag + "\n"
        for size in sizes { text += "part \(size)\n" }
        for checksum in checksums { text += "part-checksum " + checksum.stored + "\n" }
        return Array(text.utf8)
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
        for (name, values) in fields {
            switch name {
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
    }

    /// Whether the manifest describes `info` as it is now: the same key bytes, storage
    /// ETag, multipart ETag and total size.
    func describes(_ info: ObjectInfo, key objectKey: String) -> Bool {
        Array(key.utf8) == Array(objectKey.utf8) && etag == info.etag
            && info.metadata[S3Namespace.multipartETagKey] == multipartETag
            && sizes.reduce(0, +) == info.size
    }
}

/// The final object's body at completion: each part's `get` stream in turn, never more
/// than one chunk of one part in memory. Checks each part against what the completion
/// validated (its ETag and size), so that a part replaced in the meantime fails the put
/// (which then stores nothing) instead of slipping into the object.
///
/// `@unchecked Sendable`: an ``ObjectBody`` is read by one task, one call after another
/// (its contract), so `current`, `remaining` and `left` are never touched by two calls at once.
final class PartConcatenation: @unchecked Sendable {
    struct Part: Sendable {
        var number: Int
        var storageKey: String
        var etag: String
        var size: Int
    }

    private let storage: any ObjectStorage
    private var remaining: ArraySlice<Part>
    private var current: ObjectBody.Iterator?
    private var currentPart: Part?
    private var left = 0

    init(storage: any ObjectStorage, parts: [Part]) {
        self.storage = storage
        self.remaining = parts[...]
    }

    var body: ObjectBody {
        ObjectBody(length: remaining.reduce(0) { $0 + $1.size }) { [self] in try await self.next() }
    }

    func next() async throws -> [UInt8]? {
        while true {
            if var iterator = current, let part = currentPart {
                let chunk = try await iterator.next()
                current = iterator
                if let chunk {
                    if chunk.isEmpty { continue }
                    left -= chunk.count
                    guard left >= 0 else {
                        throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected \(part.size) bytes, found more. Upload it again and complete again.")
                    }
                    return chunk
                }
                guard left == 0 else {
                    throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected \(part.size) bytes, found \(part.size - left). Upload it again and complete again.")
                }
                current = nil
                currentPart = nil
            }
            guard let part = remaining.popFirst() else { return nil }
            let stream: ObjectStream
            do {
                stream = try await storage.get(part.storageKey, range: nil)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                throw S3Error.invalidPart("Part \(part.number) was removed while the upload was being completed: expected it with ETag \"\(part.etag)\", found none.")
            }
            guard stream.info.etag == part.etag, stream.info.size == part.size else {
                throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected ETag \"\(part.etag)\" and \(part.size) bytes, found \"\(stream.info.etag)\" and \(stream.info.size) bytes. Complete again with the new ETag.")
            }
            current = stream.body.makeAsyncIterator()
            currentPart = part
            left = part.size
        }
    }
}
