import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// CopyObject: `PUT /bucket/key` with `x-amz-copy-source`. The source's body streams from
/// the storage's `get` into the destination's `put`, never whole in memory. With
/// `x-amz-checksum-algorithm`, the copy's checksum of that algorithm is computed as the
/// bytes pass (a full-object one, kept beside the copy as a trailer's is) and answered.
enum CopyObjectOperation {
    static func copyObject(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try ObjectOperations.names(request)
        guard let header = request.header("x-amz-copy-source") else {
            throw S3Error.invalidRequest("CopyObject needs its source: expected an x-amz-copy-source header, found none.")
        }
        let source = try parseCopySource(header)
        let destinationKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let sourceKey = try S3Objects.storageKey(bucket: source.bucket, key: source.key)
        let replace: Bool
        switch request.header("x-amz-metadata-directive")?.uppercased() {
        case nil, "COPY"?: replace = false
        case "REPLACE"?: replace = true
        case let other?:
            throw S3Error.invalidArgument("Unknown metadata directive: expected COPY or REPLACE, found \"\(other.prefix(40))\".",
                                          name: "x-amz-metadata-directive", value: other)
        }
        if !replace, source.bucket == bucket, ObjectKey.isSame(source.key, as: key) {
            throw S3Error.invalidRequest("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes: expected x-amz-metadata-directive: REPLACE, found \(request.header("x-amz-metadata-directive") ?? "none (COPY)").")
        }
        // Checked before anything is read, so a refused copy costs no get.
        let replacedType = request.header("content-type").flatMap { $0.isEmpty ? nil : $0 }
        let replacedMetadata = replace ? try S3Objects.metadata(fromHeaders: request.head.headers.fields) : [:]
        // The algorithm is read as CreateMultipartUpload reads it; a copy is one object, so
        // its checksum is of the whole, whichever the algorithm.
        let computed = try request.header("x-amz-checksum-algorithm").map { text throws(S3Error) in
            try S3Checksum.requested(algorithm: text, type: nil)?.algorithm
        } ?? nil
        if source.bucket != bucket { try await S3Objects.requireBucket(context, source.bucket) }
        let (info, checksum) = try await S3Objects.writing(into: bucket, context) { landed in
            let stream: ObjectStream
            do {
                stream = try await context.storage.get(sourceKey, range: nil)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                throw S3Error.noSuchKey(source.key)
            }
            try S3Conditions.copySource(request.head.headers).requireCopySource(stream.info)

            let contentType: String?
            var metadata: [String: String]
            if replace {
                contentType = replacedType
                metadata = replacedMetadata
            } else {
                contentType = stream.info.contentType
                metadata = stream.info.metadata
                // The copy is one new object: its ETag is its content's MD5, not the parts'.
                metadata[S3Namespace.multipartETagKey] = nil
                metadata[S3Namespace.uploadIDKey] = nil
                // The same bytes have the same whole-object checksum; a composite one
                // described the source's parts, which the copy does not have.
                metadata[S3Checksum.metadataKey] = nil
                if let checksum = try await S3ChecksumRecord.stored(context, for: stream.info,
                                                                    recordKey: MultipartLayout.checksumKey(bucket: source.bucket, key: source.key)),
                   checksum.type == .fullObject {
                    _ = S3Objects.keep(checksum, in: &metadata)
                }
            }
            let running = try computed.map { try RunningChecksum($0, over: stream.body) }
            if running != nil { metadata[S3Checksum.metadataKey] = nil }
            let info = landed.landed(try await context.storage.put(destinationKey, body: running?.body(length: stream.body.length) ?? stream.body,
                                                                    contentType: contentType, metadata: metadata, condition: .none))
            // Known once the bytes have passed, after the put took the metadata: kept
            // beside the copy, naming the ETag it describes.
            let checksum = try running?.finish()
            if let checksum {
                try await S3ChecksumRecord.write(context, checksum, describing: info, at: MultipartLayout.checksumKey(bucket: bucket, key: key))
            }
            return (info, checksum)
        }
        var xml = S3XMLWriter(root: "CopyObjectResult")
        xml.element("LastModified", S3Objects.listingTime(info.lastModified))
        xml.element("ETag", S3Objects.etag(info))
        if let checksum {
            xml.element(checksum.element, checksum.value)
            xml.element("ChecksumType", checksum.type.rawValue)
        }
        return S3OperationSupport.xml(xml.finish())
    }

    /// The bucket and key of an `x-amz-copy-source` header: `/bucket/key` or
    /// `bucket/key`, URL-encoded, optionally followed by `?versionId=null` (the one
    /// version of an object in an unversioned bucket). `InvalidArgument` otherwise.
    /// UploadPartCopy reads its source with it too.
    static func parseCopySource(_ header: String) throws(S3Error) -> (bucket: String, key: String) {
        func invalid(_ why: String) -> S3Error {
            .invalidArgument("Copy Source must mention the source bucket and key: expected sourcebucket/sourcekey (URL-encoded), \(why).",
                             name: "x-amz-copy-source", value: header)
        }
        var text = Substring(header)
        if let question = text.utf8.firstIndex(of: UInt8(ascii: "?")) {
            let query = text[text.utf8.index(after: question)...]
            text = text[..<question]
            for item in query.split(separator: "&") {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts[0] == "versionId" else { throw invalid("found the query item \"\(item.prefix(64))\"") }
                let version = parts.count > 1 ? PercentEncoding.decodedText(parts[1]) ?? "" : ""
                guard version == "null" else {
                    throw S3Error.invalidArgument("Invalid version id specified: expected \"null\" (buckets here are not versioned), found \"\(version.prefix(128))\".",
                                                  name: "x-amz-copy-source", value: header)
                }
            }
        }
        if text.hasPrefix("/") { text = text.dropFirst() }
        guard let decoded = PercentEncoding.decodedText(text) else {
            throw invalid("found a malformed %-escape or bytes that are not UTF-8")
        }
        guard let slash = decoded.utf8.firstIndex(of: UInt8(ascii: "/")) else { throw invalid("found no '/' between them") }
        let bucket = String(decoded[..<slash]), key = String(decoded[decoded.utf8.index(after: slash)...])
        guard !bucket.isEmpty else { throw invalid("found no bucket") }
        guard !key.isEmpty else { throw invalid("found no key") }
        return (bucket, key)
    }
}
