import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

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
