import PlugboardAPI

/// A checksum known only after its object was stored (it came in the body's trailer),
/// kept beside the object: `plugboard-s3-checksum 1`, then `etag <storage ETag>` (the
/// object it describes) and `checksum <S3Checksum.stored>`.
enum S3ChecksumRecord {
    static let header = "plugboard-s3-checksum 1"

    static func encoded(_ checksum: S3Checksum, etag: String) -> [UInt8] {
        Array((header + "\netag " + etag + "\nchecksum " + checksum.stored + "\n").utf8)
    }

    /// The checksum, when the record describes the object whose storage ETag is `etag`.
    static func parse(_ content: [UInt8], etag: String) -> S3Checksum? {
        guard let fields = MultipartText.fields(content, header: header) else { return nil }
        var describes = false
        var checksum: S3Checksum?
        for (name, values) in fields {
            if name == "etag" { describes = values.count == 1 && values[0] == etag }
            if name == "checksum" { checksum = S3Checksum(stored: values.joined(separator: " ")) }
        }
        return describes ? checksum : nil
    }

    /// Writes `checksum` beside the object or part at `recordKey`, describing `info`.
    static func write(_ context: S3Context, _ checksum: S3Checksum, describing info: ObjectInfo, at recordKey: String) async throws {
        _ = try await context.records.put(recordKey, data: encoded(checksum, etag: info.etag), contentType: "text/plain", metadata: [:])
    }

    /// The checksum kept for `info`: in its metadata, else in the record at `recordKey`
    /// when that describes it; nil when none was kept.
    static func stored(_ context: S3Context, for info: ObjectInfo, recordKey: String) async throws -> S3Checksum? {
        if let text = info.metadata[S3Checksum.metadataKey] { return S3Checksum(stored: text) }
        do {
            let content = try await context.records.get(recordKey, range: nil).body.collect(upTo: 4096)
            return parse(content, etag: info.etag)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
    }
}
