import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardHTTP

/// S3's multipart uploads over the bound storage (``MultipartLayout`` says where each
/// piece lives): CreateMultipartUpload, UploadPart, UploadPartCopy,
/// CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads, and
/// GetObject / HeadObject with `?partNumber=`.
///
/// Part bodies stream to the storage and the completed object streams from the parts:
/// no operation holds a part or an object in memory.
public enum MultipartOperations {
    /// The smallest part but the last that CompleteMultipartUpload takes: S3's 5 MiB,
    /// what `plugboard serve` uses. Tests lower it (task-local, so suites running at
    /// once do not see each other's value).
    @TaskLocal public static var minimumPartSize = 5 * 1024 * 1024

    /// A GET answer up to this size is sent from one buffer; a larger one streams.
    static let wholeAnswerBytes = 1024 * 1024

    // MARK: CreateMultipartUpload (POST /bucket/key?uploads)

    public static func createMultipartUpload(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        _ = try S3Objects.storageKey(bucket: bucket, key: key)
        let metadata = try S3Objects.metadata(fromHeaders: request.head.headers.fields)
        // The completed object adds its multipart ETag ("<32 hex>-10000" at most) and its
        // upload ID to this metadata: refuse now what would not fit then.
        var completed = metadata
        completed[S3Namespace.multipartETagKey] = String(repeating: "0", count: 32) + "-10000"
        completed[S3Namespace.uploadIDKey] = String(repeating: "0", count: 32)
        do throws(PlugboardError) {
            try ObjectMetadata.validate(completed)
        } catch {
            let reserved = completed.filter { $0.key.hasPrefix(S3Namespace.reservedMetadataPrefix) && metadata[$0.key] == nil }
                .reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            throw S3Error.invalidArgument("The metadata leaves no room for the multipart ETag and upload ID the completed object keeps: expected at most \(ObjectMetadata.maxTotalByteCount - reserved) bytes of keys and values in all. \(error.detail ?? "")",
                                          name: "x-amz-meta-*")
        }
        let contentType = request.header("content-type")
        do throws(PlugboardError) {
            _ = try ObjectContentType.resolve(contentType)
        } catch {
            throw S3Error.invalidArgument("The Content-Type is not one the storage takes: \(error.message).", name: "Content-Type", value: contentType)
        }
        let checksum = try S3Checksum.requested(algorithm: request.header("x-amz-checksum-algorithm"), type: request.header("x-amz-checksum-type"))
        let uploadID = MultipartLayout.newUploadID()
        let record = MultipartRecord(key: key, contentType: contentType, initiated: Timestamp.now(),
                                     initiator: request.accessKeyID, metadata: metadata, checksum: checksum)
        _ = try await S3Objects.writing(into: bucket, context) { landed in
            // With the type and metadata the object will have: a layer that judges objects
            // judges the upload now, before any part is sent (StorageCall.Purpose.upload).
            landed.landed(try await context.upload(uploadID, object: S3Namespace.objectKey(bucket: bucket, key: key), as: .upload)
                .put(MultipartLayout.recordKey(bucket: bucket, uploadID: uploadID), data: record.encoded(), contentType: contentType,
                     metadata: metadata))
        }
        var xml = S3XMLWriter(root: "InitiateMultipartUploadResult")
        xml.element("Bucket", bucket)
        xml.element("Key", key)
        xml.element("UploadId", uploadID)
        var response = xmlResponse(xml)
        if let checksum {
            response.headers += [("x-amz-checksum-algorithm", checksum.algorithm.displayName), ("x-amz-checksum-type", checksum.type.rawValue)]
        }
        return response
    }

    // MARK: UploadPart (PUT /bucket/key?partNumber=N&uploadId=X)

    public static func uploadPart(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let partNumber = try self.partNumber(request)
        let uploadID = try self.uploadID(request)
        let partKey = MultipartLayout.partKey(bucket: bucket, uploadID: uploadID, partNumber: partNumber)
        let info = try await S3Objects.writing(into: bucket, context) { landed in
            let record = try await loadRecord(context, bucket: bucket, key: key, uploadID: uploadID)
            if let length = request.body.length, length > MultipartLayout.maxPartSize {
                throw S3Error.entityTooLarge("Your proposed upload exceeds the maximum allowed object size: expected a part of at most \(MultipartLayout.maxPartSize) bytes, found \(length).")
            }
            if let wanted = record.checksum?.algorithm { try requirePartChecksum(wanted, request) }
            // The part's checksum is kept as the object's would be: a header's with the
            // bytes, a trailer's beside them once the body has ended.
            var metadata: [String: String] = [:]
            let declared = S3Checksum.declared(in: request.head.headers).flatMap { S3Objects.keep($0, in: &metadata) ? $0 : nil }
            let info = landed.landed(try await context.upload(uploadID, object: S3Namespace.objectKey(bucket: bucket, key: key), as: .part)
                .put(partKey, body: request.body, contentType: nil, metadata: metadata, condition: .none))
            if declared == nil, let checksum = S3Checksum.verified(request.verifiedChecksums) {
                try await S3ChecksumRecord.write(context, checksum, describing: info,
                                                 at: MultipartLayout.partChecksumKey(bucket: bucket, uploadID: uploadID, partNumber: partNumber))
            }
            try await confirmStillOpen(context, bucket: bucket, uploadID: uploadID, partKey: partKey)
            return info
        }
        // The part's checked checksums, as S3 answers them. They are not kept: a
        // CompleteMultipartUpload that lists per-part checksums is not checked against them
        // (docs/S3_API.md, differences).
        return HTTPResponse(status: 200, headers: [("ETag", "\"" + info.etag + "\"")] + request.verifiedChecksums.answerHeaders)
    }

    /// An upload made with a checksum algorithm takes parts that carry that one, in a
    /// header or announced for the trailer, as S3 requires.
    static func requirePartChecksum(_ algorithm: ChecksumAlgorithm, _ request: S3Request) throws(S3Error) {
        let announced = (request.header("x-amz-trailer") ?? "").lowercased().split(separator: ",").map { ASCIIText.trimmed(String($0)) }
        let carried = ChecksumAlgorithm.allCases.filter { request.header($0.headerName) != nil || announced.contains($0.headerName) }
        guard carried == [algorithm] else {
            throw S3Error.invalidRequest("The upload was created using a \(algorithm.displayName) checksum: expected each part to carry x-amz-checksum-\(algorithm.rawValue), found \(carried.isEmpty ? "none" : carried.map(\.headerName).joined(separator: ", ")).")
        }
    }

    // MARK: UploadPartCopy (PUT ...?partNumber=N&uploadId=X, x-amz-copy-source)

    public static func uploadPartCopy(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let partNumber = try self.partNumber(request)
        let uploadID = try self.uploadID(request)
        guard let sourceHeader = request.header("x-amz-copy-source") else {
            throw S3Error.invalidArgument("UploadPartCopy needs x-amz-copy-source: expected \"bucket/key\", found none.", name: "x-amz-copy-source")
        }
        let source = try parseCopySource(sourceHeader)
        let (info, checksum) = try await S3Objects.writing(into: bucket, context) { landed in
            let record = try await loadRecord(context, bucket: bucket, key: key, uploadID: uploadID)
            try await S3Objects.requireBucket(context, source.bucket)
            let sourceKey = try S3Objects.storageKey(bucket: source.bucket, key: source.key)
            var range: (first: Int, last: Int)?
            if let rangeHeader = request.header("x-amz-copy-source-range") {
                range = try parseCopySourceRange(rangeHeader)
            }
            let stream: ObjectStream
            do {
                stream = try await context.storage.get(sourceKey, range: range.map { ByteRange.closed(first: $0.first, last: $0.last) })
            } catch let error as PlugboardError where error.code == .storageNotFound {
                throw S3Error.noSuchKey(source.key)
            } catch let error as PlugboardError where error.code == .storageRangeNotSatisfiable {
                let info = try await context.storage.head(sourceKey)
                throw S3Error.invalidArgument("Range specified is not valid for source object of size: \(info.size): found \(range.map { "bytes=\($0.first)-\($0.last)" } ?? "").",
                                              name: "x-amz-copy-source-range")
            }
            if let range, range.last >= stream.info.size {
                throw S3Error.invalidArgument("Range specified is not valid for source object of size: \(stream.info.size): expected a last byte below \(stream.info.size), found \(range.last).",
                                              name: "x-amz-copy-source-range", value: "bytes=\(range.first)-\(range.last)")
            }
            try S3Conditions.copySource(request.head.headers).requireCopySource(stream.info)
            let length = stream.range?.count ?? stream.info.size
            if length > MultipartLayout.maxPartSize {
                throw S3Error.entityTooLarge("Your proposed upload exceeds the maximum allowed object size: expected a part of at most \(MultipartLayout.maxPartSize) bytes, found \(length); copy it in ranges.")
            }
            let partKey = MultipartLayout.partKey(bucket: bucket, uploadID: uploadID, partNumber: partNumber)
            // An upload made with an algorithm gets the copied part's checksum computed
            // here, as S3 computes it, since the client sends no bytes to send one for.
            let running = try record.checksum.map { try RunningChecksum($0.algorithm, over: stream.body) }
            let body = running?.body(length: stream.body.length) ?? stream.body
            let info = landed.landed(try await context.upload(uploadID, object: S3Namespace.objectKey(bucket: bucket, key: key), as: .part)
                .put(partKey, body: body, contentType: nil, metadata: [:], condition: .none))
            let checksum = try running?.finish()
            if let checksum {
                try await S3ChecksumRecord.write(context, checksum, describing: info,
                                                 at: MultipartLayout.partChecksumKey(bucket: bucket, uploadID: uploadID, partNumber: partNumber))
            }
            try await confirmStillOpen(context, bucket: bucket, uploadID: uploadID, partKey: partKey)
            return (info, checksum)
        }
        var xml = S3XMLWriter(root: "CopyPartResult")
        xml.element("LastModified", S3Objects.listingTime(info.lastModified))
        xml.element("ETag", "\"" + info.etag + "\"")
        if let checksum { xml.element(checksum.element, checksum.value) }
        return xmlResponse(xml)
    }

    // MARK: CompleteMultipartUpload (POST /bucket/key?uploadId=X)

    public static func completeMultipartUpload(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let uploadID = try self.uploadID(request)
        let objectKey = try S3Objects.storageKey(bucket: bucket, key: key)
        // A list of 10,000 parts with long ETags is about 1 MiB of XML.
        let document = try await request.body.collect(upTo: 4 * 1024 * 1024)
        let requested = try parseCompletion(document)
        // The part ETags the client lists are the parts' MD5s: the multipart ETag follows
        // from the list alone, so a repeated Complete is known by it.
        let listedETag = try? multipartETag(of: requested)
        let result = { (multipartETag: String, checksum: S3Checksum?) -> HTTPResponse in
            var xml = S3XMLWriter(root: "CompleteMultipartUploadResult")
            xml.element("Location", "/" + bucket + "/" + MultipartText.encode(key))
            xml.element("Bucket", bucket)
            xml.element("Key", key)
            xml.element("ETag", "\"" + multipartETag + "\"")
            if let checksum {
                xml.element(checksum.element, checksum.value)
                xml.element("ChecksumType", checksum.type.rawValue)
            }
            return xmlResponse(xml)
        }
        func complete(_ landed: S3LandedWrites) async throws -> HTTPResponse {
            let record = try await loadRecord(context, bucket: bucket, key: key, uploadID: uploadID)
            let stored = try await listParts(context, bucket: bucket, uploadID: uploadID, after: 0, limit: MultipartLayout.maxPartNumber)
            let parts = try concatenated(requested, from: stored.parts, uploadID: uploadID)
            try checkObjectSize(request.header("x-amz-mp-object-size"), parts: parts)
            // The listed ETags are the stored parts' now.
            guard let multipartETag = listedETag else {
                throw S3Error.internalError("The storage's ETags of the parts are not MD5s: expected 32 hex digits each, found \(parts.map { "\"\($0.etag.prefix(80))\"" }.joined(separator: ", ").prefix(400)).")
            }

            var metadata = record.metadata
            metadata[S3Namespace.multipartETagKey] = multipartETag
            metadata[S3Namespace.uploadIDKey] = uploadID
            let (checksum, partChecksums) = try await completedChecksum(context, request, record: record, requested: requested,
                                                                        parts: parts, bucket: bucket, uploadID: uploadID)
            let checksumKept = checksum.map { S3Objects.keep($0, in: &metadata) } ?? true
            let condition = try await ObjectOperations.writeCondition(context, request, storageKey: objectKey, key: key)
            var layout = MultipartManifest(key: key, etag: MultipartManifest.unstoredETag, multipartETag: multipartETag,
                                           sizes: parts.map(\.size), checksums: partChecksums)
            layout.objectChecksum = checksumKept ? nil : checksum
            let claimed = try await claimCompletion(context, bucket: bucket, uploadID: uploadID, layout: layout)
            let concatenation = PartConcatenation(storage: context.records, parts: parts)
            let info: ObjectInfo
            do {
                info = try await ObjectOperations.conditionally(request) {
                    do {
                        return landed.landed(try await context.upload(uploadID, object: objectKey, as: .object).put(objectKey, body: concatenation.body, contentType: record.contentType,
                                                                           metadata: metadata, condition: condition))
                    } catch let error as PlugboardError where error.code.area == "storage" && error.code != .storagePreconditionFailed {
                        // A plugin's own code goes on to the router, which answers its mapping.
                        throw S3Error(storage: error, bucket: bucket, key: key)
                    }
                }
            } catch let refusal as S3Error where refusal.code == "PreconditionFailed" {
                // Two Completes of one upload at once, both with If-None-Match: the one
                // that lost finds the other's object, which is its own.
                if try await completedAlready(context, bucket: bucket, key: key, uploadID: uploadID, multipartETag: multipartETag) != nil {
                    return result(multipartETag, checksum)
                }
                // The client's condition refused the object: the upload stays open, to any list.
                if claimed { try? await context.records.delete(MultipartLayout.completionKey(bucket: bucket, uploadID: uploadID)) }
                throw refusal
            }
            // The manifest before the clean-up: should it fail (or the server stop), the
            // object already names its upload, whose claim holds the layout until a
            // repeated Complete, a listing or a read writes the manifest from it.
            if let checksum, !checksumKept {
                try await S3ChecksumRecord.write(context, checksum, describing: info, at: MultipartLayout.checksumKey(bucket: bucket, key: key))
            }
            layout.etag = info.etag
            layout.objectChecksum = nil
            _ = try await context.records.put(MultipartLayout.manifestKey(bucket: bucket, key: key), data: layout.encoded(),
                                              contentType: "text/plain", metadata: [:])
            await removeUpload(context, bucket: bucket, uploadID: uploadID)
            return result(multipartETag, checksum)
        }
        return try await S3Objects.writing(into: bucket, context) { landed in
            // Completed already (the client lost the answer, or the server stopped before
            // the upload's clean-up): the same answer, and the clean-up finished.
            let answerCompleted = { () async throws -> HTTPResponse? in
                guard let listedETag,
                      let done = try await completedAlready(context, bucket: bucket, key: key, uploadID: uploadID, multipartETag: listedETag) else {
                    return nil
                }
                return result(listedETag, try await S3ChecksumRecord.stored(context, for: done, recordKey: MultipartLayout.checksumKey(bucket: bucket, key: key)))
            }
            if let answer = try await answerCompleted() { return answer }
            do {
                return try await complete(landed)
            } catch {
                // A Complete racing another of the same upload may find its record, parts
                // or claim gone under it: once the other has stored the object, the answer
                // is that one's (the same list) or InvalidPart (another list).
                if let answer = try await answerCompleted() { return answer }
                throw error
            }
        }
    }

    /// Claims the upload's completion for the part list whose multipart ETag is
    /// `multipartETag`, before the object is stored: the claim is written create-only, so
    /// of Completes racing with different lists, on one host or many over one storage,
    /// exactly one stores its object and the others answer `InvalidPart`. A claim for the
    /// same list lets the Complete go on (a retry, or one that finishes a Complete that
    /// stopped after claiming). The claim holds the object's `layout` (its part sizes and
    /// checksums), the manifest it will have. Returns whether this call wrote the claim.
    static func claimCompletion(_ context: S3Context, bucket: String, uploadID: String, layout: MultipartManifest) async throws -> Bool {
        let claimKey = MultipartLayout.completionKey(bucket: bucket, uploadID: uploadID)
        let multipartETag = layout.multipartETag
        do {
            _ = try await context.records.put(claimKey, data: layout.claimText, contentType: "text/plain", metadata: [:], condition: .absent)
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            let claimed: String
            do {
                claimed = MultipartManifest.claimedETag(try await context.records.get(claimKey, range: nil).body.collect(upTo: MultipartManifest.maxBytes))
            } catch let error as PlugboardError where error.code == .storageNotFound {
                // Removed by the winner's clean-up, parts first: nothing is left to complete.
                throw S3Error.noSuchUpload(uploadID)
            }
            guard claimed == multipartETag else {
                throw S3Error.invalidPart("Upload \(uploadID) is being completed by another CompleteMultipartUpload, from another list of parts: expected the list that makes ETag \"\(claimed.prefix(48))\", found one that makes \"\(multipartETag)\". Complete it with that list, or abort it.")
            }
            return false
        } catch let error as PlugboardError where error.code == .storageUnsupported {
            context.logger.warning("The storage cannot write the completion claim of upload \(uploadID) create-only (\(error.message)); two Completes with different part lists at once could both be answered 200.")
            return false
        }
        // Written after the upload's clean-up removed its record: no object may follow.
        try await confirmStillOpen(context, bucket: bucket, uploadID: uploadID, partKey: claimKey)
        return true
    }

    /// `"<md5 of the parts' md5s>-N"` without quotes, from a Complete's part list.
    static func multipartETag(of requested: [CompletionPart]) throws(S3Error) -> String {
        var digests: [UInt8] = []
        digests.reserveCapacity(16 * requested.count)
        for part in requested {
            guard let digest = HexDigits.bytes(part.etag), digest.count == 16 else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found or the specified entity tag might not have matched the part's entity tag: expected part \(part.number)'s ETag to be an MD5 (32 hex digits, as UploadPart answers it), found \"\(part.etag.prefix(80))\".")
            }
            digests += digest
        }
        do {
            return Hex.encode(try MD5Hasher.hash(digests)) + "-\(requested.count)"
        } catch {
            throw S3Error.internalError("Could not compute the multipart ETag: \(error).")
        }
    }

    /// The stored parts a Complete's list names, in its order, each checked: present, its
    /// ETag the one listed, and at least the minimum size unless it is the last.
    static func concatenated(_ requested: [CompletionPart], from stored: [(number: Int, info: ObjectInfo)],
                             uploadID: String) throws(S3Error) -> [PartConcatenation.Part] {
        var uploaded: [Int: ObjectInfo] = [:]
        for (number, info) in stored { uploaded[number] = info }
        var parts: [PartConcatenation.Part] = []
        for (index, part) in requested.enumerated() {
            guard let info = uploaded[part.number] else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found: expected part \(part.number) with ETag \"\(part.etag)\", found no such part in upload \(uploadID).")
            }
            guard info.etag == part.etag else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found or the specified entity tag might not have matched the part's entity tag: expected part \(part.number) with ETag \"\(part.etag)\", found ETag \"\(info.etag)\".")
            }
            if index < requested.count - 1, info.size < minimumPartSize {
                throw S3Error("EntityTooSmall", status: 400,
                              "Your proposed upload is smaller than the minimum allowed size: expected part \(part.number) (not the last) to have at least \(minimumPartSize) bytes, found \(info.size).",
                              fields: [("PartNumber", String(part.number)), ("ProposedSize", String(info.size)), ("MinSizeAllowed", String(minimumPartSize))])
            }
            parts.append(PartConcatenation.Part(number: part.number, storageKey: info.key, etag: info.etag, size: info.size))
        }
        return parts
    }

    /// Whether the object under `objectKey` is upload `uploadID` completed from the same
    /// part list (its multipart ETag): then whatever is left of the upload is removed.
    /// An object completed from the upload with another list, or replaced since, is not.
    /// What answers a repeated Complete is the object itself, for as long as it stands.
    static func completedAlready(_ context: S3Context, bucket: String, key: String, uploadID: String,
                                 multipartETag: String) async throws -> ObjectInfo? {
        let info: ObjectInfo
        do {
            info = try await context.storage.head(try S3Objects.storageKey(bucket: bucket, key: key))
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
        guard info.metadata[S3Namespace.uploadIDKey] == uploadID else { return nil }
        guard info.metadata[S3Namespace.multipartETagKey] == multipartETag else {
            throw S3Error.invalidPart("Upload \(uploadID) was completed already, from another list of parts: expected the list that made ETag \"\(info.metadata[S3Namespace.multipartETagKey] ?? "")\", found one that makes \"\(multipartETag)\".")
        }
        let leftover = try await context.records.list(prefix: MultipartLayout.folder(bucket: bucket, uploadID: uploadID),
                                                      limit: 1, continuationToken: nil)
        if !leftover.objects.isEmpty { await finishCleanUp(context, bucket: bucket, key: key, uploadID: uploadID, info: info) }
        return info
    }

    /// The completed object's checksum, when the upload was made with an algorithm or the
    /// Complete names one (``S3Checksum/onCompletion(recorded:headers:)``): every part's
    /// kept checksum (the one the client lists for it must be the same), then the parts'
    /// checksum of that type; a whole-object value the client sends (`x-amz-checksum-crc32`
    /// on the Complete) must match it. Also each part's checksum, in order, for the manifest.
    static func completedChecksum(_ context: S3Context, _ request: S3Request, record: MultipartRecord, requested: [CompletionPart],
                                  parts: [PartConcatenation.Part], bucket: String,
                                  uploadID: String) async throws -> (S3Checksum?, [S3Checksum]) {
        guard let wanted = try S3Checksum.onCompletion(recorded: record.checksum, headers: request.head.headers) else { return (nil, []) }
        var kept: [(checksum: S3Checksum, size: Int)] = []
        for (listed, part) in zip(requested, parts) {
            guard let checksum = try await partChecksum(context, bucket: bucket, uploadID: uploadID, number: part.number, storageKey: part.storageKey) else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found: expected part \(part.number) to carry a \(wanted.algorithm.displayName) checksum, as the upload was created with one or the Complete names one, found none kept.")
            }
            if let given = listed.checksum, given.algorithm != checksum.algorithm || given.value != checksum.value {
                throw S3Error.invalidPart("One or more of the specified parts could not be found or the specified checksum might not have matched the part's checksum: expected part \(part.number)'s \(checksum.element) \(checksum.value), found \(given.element) \(given.value).")
            }
            kept.append((checksum, part.size))
        }
        let whole = try S3Checksum.ofParts(kept, algorithm: wanted.algorithm, type: wanted.type)
        try S3Checksum.checkSentOnCompletion(request.head.headers, whole: whole)
        return (whole, kept.map(\.checksum))
    }

    /// `x-amz-mp-object-size` (botocore's `MpuObjectSize`, beside a full-object checksum): when
    /// given, the listed parts' total size, else 400 `InvalidRequest` as S3 answers it.
    static func checkObjectSize(_ text: String?, parts: [PartConcatenation.Part]) throws(S3Error) {
        guard let text else { return }
        let total = parts.reduce(0) { $0 + $1.size }
        let trimmed = ASCIIText.trimmed(text)
        guard trimmed.utf8.count <= 18, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), Int(trimmed) == total else {
            throw S3Error.invalidRequest(
                "Value for x-amz-mp-object-size header is invalid: expected the object's size, \(total) bytes (the sum of the parts listed), found \"\(text.prefix(24))\".")
        }
    }

    /// A part's kept checksum: in its metadata (listings may leave metadata out, so the
    /// part is asked), else in the record beside it.
    static func partChecksum(_ context: S3Context, bucket: String, uploadID: String, number: Int, storageKey: String) async throws -> S3Checksum? {
        let info = try await context.records.head(storageKey)
        return try await S3ChecksumRecord.stored(context, for: info,
                                                 recordKey: MultipartLayout.partChecksumKey(bucket: bucket, uploadID: uploadID, partNumber: number))
    }

    // MARK: AbortMultipartUpload (DELETE /bucket/key?uploadId=X)

    public static func abortMultipartUpload(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let uploadID = try self.uploadID(request)
        try await S3Objects.requireBucket(context, bucket)
        let record = try await loadRecord(context, bucket: bucket, key: key, uploadID: uploadID)
        // Completed already, its clean-up cut short: finished as a listing finishes it (the
        // manifest first), and no longer an upload to abort, as S3 answers after a Complete.
        if try await completedBeforeItsCleanUp(context, bucket: bucket, uploadID: uploadID, record: record) {
            throw S3Error.noSuchUpload(uploadID)
        }
        try await removePieces(context, bucket: bucket, uploadID: uploadID)
        return HTTPResponse(status: 204)
    }

    // MARK: ListParts (GET /bucket/key?uploadId=X)

    public static func listParts(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let uploadID = try self.uploadID(request)
        let marker = try integer(request, "part-number-marker", default: 0, range: 0...Int.max)
        let maxParts = min(try integer(request, "max-parts", default: 1000, range: 0...Int.max), 1000)
        try await S3Objects.requireBucket(context, bucket)
        let record = try await loadRecord(context, bucket: bucket, key: key, uploadID: uploadID)
        var page = try await listParts(context, bucket: bucket, uploadID: uploadID, after: marker, limit: max(maxParts, 1))
        if maxParts == 0 {
            page.truncated = !page.parts.isEmpty
            page.parts = []
        }

        var xml = S3XMLWriter(root: "ListPartsResult")
        xml.element("Bucket", bucket)
        xml.element("Key", key)
        xml.element("UploadId", uploadID)
        owner(&xml, "Initiator", record.initiator)
        owner(&xml, "Owner", record.initiator)
        xml.element("StorageClass", "STANDARD")
        xml.element("PartNumberMarker", marker)
        if let last = page.parts.last { xml.element("NextPartNumberMarker", last.number) }
        xml.element("MaxParts", maxParts)
        xml.element("IsTruncated", page.truncated)
        if let checksum = record.checksum {
            xml.element("ChecksumAlgorithm", checksum.algorithm.displayName)
            xml.element("ChecksumType", checksum.type.rawValue)
        }
        for part in page.parts {
            xml.open("Part")
            xml.element("PartNumber", part.number)
            xml.element("LastModified", S3Objects.listingTime(part.info.lastModified))
            xml.element("ETag", "\"" + part.info.etag + "\"")
            xml.element("Size", part.info.size)
            // The parts' checksums matter (and cost a read each) only for an upload made with an algorithm.
            if record.checksum != nil,
               let checksum = try await partChecksum(context, bucket: bucket, uploadID: uploadID, number: part.number, storageKey: part.info.key) {
                xml.element(checksum.element, checksum.value)
            }
            xml.close("Part")
        }
        return xmlResponse(xml)
    }

    // MARK: ListMultipartUploads (GET /bucket?uploads)

    public static func listMultipartUploads(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        guard let bucket = request.bucket else { throw S3Error.invalidRequest("ListMultipartUploads names a bucket: expected /bucket?uploads, found none.") }
        let prefix = request.query("prefix") ?? ""
        let delimiter = request.query("delimiter").flatMap { $0.isEmpty ? nil : $0 }
        let keyMarker = request.query("key-marker").flatMap { $0.isEmpty ? nil : $0 }
        let uploadIDMarker = keyMarker == nil ? nil : request.query("upload-id-marker").flatMap { $0.isEmpty ? nil : $0 }
        let maxUploads = min(try integer(request, "max-uploads", default: 1000, range: 0...Int.max), 1000)
        let encodingType = request.query("encoding-type")
        if let encodingType, encodingType != "url" {
            throw S3Error.invalidArgument("Invalid Encoding Method specified in Request: expected \"url\", found \"\(encodingType.prefix(64))\".",
                                          name: "encoding-type", value: encodingType)
        }
        let encode: (String) -> String = encodingType == nil ? { $0 } : { MultipartText.encode($0) }
        try await S3Objects.requireBucket(context, bucket)

        var uploads = try await uploadsInProgress(context, bucket: bucket)
        uploads = uploads.filter { $0.record.key.utf8.starts(with: prefix.utf8) }
        uploads.sort { a, b in
            if Array(a.record.key.utf8) != Array(b.record.key.utf8) { return ObjectKey.precedes(a.record.key, b.record.key) }
            return a.id < b.id
        }

        enum Entry { case upload(id: String, record: MultipartRecord), prefix(String) }
        var entries: [Entry] = []
        var truncated = false
        var seenPrefixes: Set<[UInt8]> = []
        for upload in uploads {
            let key = upload.record.key
            var group: String?
            if let delimiter {
                let rest = key.utf8.dropFirst(prefix.utf8.count)
                if let range = firstRange(of: Array(delimiter.utf8), in: Array(rest)) {
                    group = String(decoding: Array(key.utf8.prefix(prefix.utf8.count + range.upperBound)), as: UTF8.self)
                }
            }
            if let keyMarker {
                if let group {
                    if !ObjectKey.precedes(keyMarker, group) { continue }
                } else if Array(key.utf8) == Array(keyMarker.utf8) {
                    guard let uploadIDMarker, upload.id > uploadIDMarker else { continue }
                } else if !ObjectKey.precedes(keyMarker, key) {
                    continue
                }
            }
            if let group {
                guard seenPrefixes.insert(Array(group.utf8)).inserted else { continue }
            }
            if entries.count == maxUploads { truncated = true; break }
            entries.append(group.map { .prefix($0) } ?? .upload(id: upload.id, record: upload.record))
        }

        var xml = S3XMLWriter(root: "ListMultipartUploadsResult")
        xml.element("Bucket", bucket)
        xml.element("KeyMarker", encode(keyMarker ?? ""))
        xml.element("UploadIdMarker", uploadIDMarker ?? "")
        if truncated, let last = entries.last {
            switch last {
            case .upload(let id, let record):
                xml.element("NextKeyMarker", encode(record.key))
                xml.element("NextUploadIdMarker", id)
            case .prefix(let group):
                xml.element("NextKeyMarker", encode(group))
                xml.element("NextUploadIdMarker", "")
            }
        }
        if let delimiter { xml.element("Delimiter", encode(delimiter)) }
        xml.element("Prefix", encode(prefix))
        xml.element("MaxUploads", maxUploads)
        xml.element("IsTruncated", truncated)
        for case .upload(let id, let record) in entries {
            xml.open("Upload")
            xml.element("Key", encode(record.key))
            xml.element("UploadId", id)
            owner(&xml, "Initiator", record.initiator)
            owner(&xml, "Owner", record.initiator)
            xml.element("StorageClass", "STANDARD")
            xml.element("Initiated", S3Objects.listingTime(record.initiated))
            xml.close("Upload")
        }
        for case .prefix(let group) in entries {
            xml.open("CommonPrefixes")
            xml.element("Prefix", encode(group))
            xml.close("CommonPrefixes")
        }
        if let encodingType { xml.element("EncodingType", encodingType) }
        return xmlResponse(xml)
    }

    // MARK: GetObject / HeadObject with ?partNumber=N

    public static func getObjectPart(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        try await objectPart(context, request, head: false)
    }

    public static func headObjectPart(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        try await objectPart(context, request, head: true)
    }

    static func objectPart(_ context: S3Context, _ request: S3Request, head: Bool) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let partNumber = try self.partNumber(request)
        let objectKey = try S3Objects.storageKey(bucket: bucket, key: key)
        if request.header("range") != nil {
            throw S3Error.invalidRequest("Cannot specify both Range header and partNumber query parameter: expected one of them, found both.")
        }
        try await S3Objects.requireBucket(context, bucket)
        // The object may be replaced between reading its manifest and its bytes: then the
        // stream's ETag differs, and the plan is made again from the new object.
        for _ in 0..<3 {
            let info: ObjectInfo
            do {
                info = try await context.storage.head(objectKey)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                throw S3Error.noSuchKey(key)
            }
            if let refusal = try S3Conditions(request.head.headers).readRefusal(info) { return refusal }
            let sizes = try await partSizes(context, bucket: bucket, key: key, info: info)
            guard partNumber <= (sizes?.count ?? 1) else { throw invalidPartNumber(partNumber, count: sizes?.count ?? 1) }
            let offset = sizes.map { $0.prefix(partNumber - 1).reduce(0, +) } ?? 0
            let size = sizes.map { $0[partNumber - 1] } ?? info.size
            var headers = S3Objects.headers(for: info)
            if let sizes { headers.append(("x-amz-mp-parts-count", String(sizes.count))) }
            // No Content-Range can name zero bytes: an empty part is answered whole (200).
            let status = size == 0 ? 200 : 206
            if size > 0 { headers.append(("Content-Range", "bytes \(offset)-\(offset + size - 1)/\(info.size)")) }
            if head { return HTTPResponse(status: status, headers: headers, headLength: size) }
            if size == 0 { return HTTPResponse(status: 200, headers: headers) }
            let stream: ObjectStream
            do {
                stream = try await context.storage.get(objectKey, range: .closed(first: offset, last: offset + size - 1))
            } catch let error as PlugboardError where error.code == .storageNotFound || error.code == .storageRangeNotSatisfiable {
                continue
            }
            guard stream.info.etag == info.etag, stream.range?.count == size else { continue }
            if size <= wholeAnswerBytes {
                return HTTPResponse(status: 206, headers: headers, body: try await stream.body.collect(upTo: size))
            }
            return HTTPResponse(status: 206, headers: headers, stream: ResponseStream(length: size, body: stream.body))
        }
        throw S3Error.serviceUnavailable("The object \(key) was replaced three times while its part \(partNumber) was being read; retry.")
    }

    // MARK: For the other operations

    /// Removes the part manifest of `key`, for PutObject, CopyObject and DeleteObject to
    /// call once they have replaced or removed the object: a manifest that no longer
    /// describes its object is ignored anyway, and this keeps none behind.
    public static func forgetParts(_ context: S3Context, bucket: String, key: String) async throws {
        try await context.records.delete(MultipartLayout.manifestKey(bucket: bucket, key: key))
        try await context.records.delete(MultipartLayout.checksumKey(bucket: bucket, key: key))
    }

    // MARK: Shared steps

    /// The bucket and key of an object-level request.
    static func names(_ request: S3Request) throws(S3Error) -> (bucket: String, key: String) {
        guard let bucket = request.bucket, let key = request.key, !key.isEmpty else {
            throw S3Error.invalidRequest("A multipart upload names an object: expected /bucket/key, found \(request.bucket == nil ? "no bucket" : "no key").")
        }
        return (bucket, key)
    }

    static func uploadID(_ request: S3Request) throws(S3Error) -> String {
        guard let id = request.query("uploadId"), !id.isEmpty else {
            throw S3Error.invalidArgument("This operation needs an uploadId: expected ?uploadId=<id from CreateMultipartUpload>, found none.", name: "uploadId")
        }
        return id
    }

    static func partNumber(_ request: S3Request) throws(S3Error) -> Int {
        let text = request.query("partNumber") ?? ""
        guard text.utf8.count <= 5, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = Int(text), (1...MultipartLayout.maxPartNumber).contains(number) else {
            throw S3Error.invalidArgument("Part number must be an integer between 1 and \(MultipartLayout.maxPartNumber), inclusive: found \"\(text.prefix(32))\".",
                                          name: "partNumber", value: text)
        }
        return number
    }

    /// A non-negative decimal query value, `fallback` when absent.
    static func integer(_ request: S3Request, _ name: String, default fallback: Int, range: ClosedRange<Int>) throws(S3Error) -> Int {
        try integer(request.query(name), name, default: fallback, range: range)
    }

    /// The same rule for a value from elsewhere (a header), named `name`.
    static func integer(_ text: String?, _ name: String, default fallback: Int, range: ClosedRange<Int>) throws(S3Error) -> Int {
        guard let text else { return fallback }
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), range.contains(value) else {
            throw S3Error.invalidArgument("Argument \(name) must be an integer between \(range.lowerBound) and \(range.upperBound): found \"\(text.prefix(32))\".",
                                          name: name, value: text)
        }
        return value
    }

    static func invalidPartNumber(_ number: Int, count: Int) -> S3Error {
        S3Error("InvalidPartNumber", status: 416,
                "The requested partnumber is not satisfiable: expected 1 to \(count) (the object's parts), found \(number).",
                fields: [("PartNumberRequested", String(number)), ("ActualPartCount", String(count))])
    }

    /// The upload's record; `NoSuchUpload` when it is missing, damaged or names another key.
    static func loadRecord(_ context: S3Context, bucket: String, key: String, uploadID: String) async throws -> MultipartRecord {
        guard MultipartLayout.isUploadID(uploadID) else { throw S3Error.noSuchUpload(String(uploadID.prefix(128))) }
        let recordKey = MultipartLayout.recordKey(bucket: bucket, uploadID: uploadID)
        let content: [UInt8]
        do {
            let stream = try await context.records.get(recordKey, range: nil)
            content = try await stream.body.collect(upTo: 64 * 1024)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            throw S3Error.noSuchUpload(uploadID)
        } catch let error as PlugboardError where error.code == .storageInvalidArgument {
            context.logger.error("multipart upload record \(recordKey) is over 64 KiB: \(error.message)")
            throw S3Error.internalError("The record of upload \(uploadID) is damaged: expected at most 64 KiB.")
        }
        guard let record = MultipartRecord(parsing: content) else {
            context.logger.error("multipart upload record \(recordKey) cannot be read")
            throw S3Error.internalError("The record of upload \(uploadID) is damaged: expected \"\(MultipartRecord.header)\" and its fields.")
        }
        guard Array(record.key.utf8) == Array(key.utf8) else { throw S3Error.noSuchUpload(uploadID) }
        return record
    }

    /// After a part is stored: when the upload was aborted or completed meanwhile, the
    /// part is removed again (it would be left behind for ever) and the answer is `NoSuchUpload`.
    static func confirmStillOpen(_ context: S3Context, bucket: String, uploadID: String, partKey: String) async throws {
        let open = try await context.records.exists(MultipartLayout.recordKey(bucket: bucket, uploadID: uploadID))
        if open { return }
        try? await context.records.delete(partKey)
        throw S3Error.noSuchUpload(uploadID)
    }

    /// The parts of the upload numbered above `after`, in order, at most `limit`, and
    /// whether more follow. Part keys sort as their numbers do, and the record (`upload`)
    /// after them, so the scan stops as soon as it has enough.
    static func listParts(_ context: S3Context, bucket: String, uploadID: String, after: Int, limit: Int) async throws
        -> (parts: [(number: Int, info: ObjectInfo)], truncated: Bool) {
        let folder = MultipartLayout.folder(bucket: bucket, uploadID: uploadID)
        var parts: [(number: Int, info: ObjectInfo)] = []
        var token: String?
        repeat {
            let page = try await context.records.list(prefix: folder, limit: ListingRequest.maxLimit, continuationToken: token)
            for object in page.objects {
                let name = object.key.utf8.dropFirst(folder.utf8.count)
                guard let number = MultipartLayout.partNumber(ofName: Substring(name)), number > after else { continue }
                if parts.count == limit { return (parts, true) }
                parts.append((number, object))
            }
            token = page.nextContinuationToken
        } while token != nil
        return (parts, false)
    }

    /// Every upload in progress in the bucket, with its record; records that vanish while
    /// listed (completed, aborted) are skipped, damaged ones logged and skipped.
    static func uploadsInProgress(_ context: S3Context, bucket: String) async throws -> [(id: String, record: MultipartRecord)] {
        let prefix = MultipartLayout.uploadsPrefix(bucket: bucket)
        var uploads: [(id: String, record: MultipartRecord)] = []
        var token: String?
        repeat {
            let page = try await context.records.list(prefix: prefix, limit: ListingRequest.maxLimit, continuationToken: token)
            for object in page.objects {
                let rest = String(decoding: Array(object.key.utf8.dropFirst(prefix.utf8.count)), as: UTF8.self)
                let pieces = rest.split(separator: "/", omittingEmptySubsequences: false)
                guard pieces.count == 2, pieces[1] == MultipartLayout.recordName, MultipartLayout.isUploadID(String(pieces[0])) else { continue }
                let content: [UInt8]
                do {
                    content = try await context.records.get(object.key, range: nil).body.collect(upTo: 64 * 1024)
                } catch let error as PlugboardError where error.code == .storageNotFound {
                    continue
                }
                guard let record = MultipartRecord(parsing: content) else {
                    context.logger.error("multipart upload record \(object.key) cannot be read; left out of ListMultipartUploads")
                    continue
                }
                let id = String(pieces[0])
                if try await completedBeforeItsCleanUp(context, bucket: bucket, uploadID: id, record: record) { continue }
                uploads.append((id, record))
            }
            token = page.nextContinuationToken
        } while token != nil
        return uploads
    }

    /// Whether the upload's object stands completed from it although the upload is still
    /// here (the server stopped between the two): then the clean-up is finished now, and
    /// the upload is no longer in progress.
    static func completedBeforeItsCleanUp(_ context: S3Context, bucket: String, uploadID: String,
                                          record: MultipartRecord) async throws -> Bool {
        let info: ObjectInfo
        do {
            info = try await context.storage.head(try S3Objects.storageKey(bucket: bucket, key: record.key))
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return false
        }
        guard info.metadata[S3Namespace.uploadIDKey] == uploadID else { return false }
        await finishCleanUp(context, bucket: bucket, key: record.key, uploadID: uploadID, info: info)
        return true
    }

    /// Removes what is left of an upload whose object (`info`) was completed before its
    /// clean-up ended, once the object's manifest is there: the clean-up removes the
    /// completion claim, the layout's last copy when the server stopped before the manifest.
    static func finishCleanUp(_ context: S3Context, bucket: String, key: String, uploadID: String, info: ObjectInfo) async {
        do {
            _ = try await manifest(context, bucket: bucket, key: key, info: info)
        } catch {
            context.logger.warning("upload \(uploadID) was completed before its clean-up ended, and its part manifest could not be written (\(error)); its clean-up waits for the next try")
            return
        }
        context.logger.info("upload \(uploadID) was completed before its clean-up ended; finishing it")
        await removeUpload(context, bucket: bucket, uploadID: uploadID)
    }

    /// The part sizes of `info` when it was completed from parts and its manifest still
    /// describes it; nil for an object stored whole. A stale manifest is removed.
    static func partSizes(_ context: S3Context, bucket: String, key: String, info: ObjectInfo) async throws -> [Int]? {
        try await manifest(context, bucket: bucket, key: key, info: info)?.sizes
    }

    /// The manifest of `info` when it was completed from parts and the manifest still
    /// describes it; nil for an object stored whole. A stale manifest is removed.
    static func manifest(_ context: S3Context, bucket: String, key: String, info: ObjectInfo) async throws -> MultipartManifest? {
        let manifestKey = MultipartLayout.manifestKey(bucket: bucket, key: key)
        let manifest: MultipartManifest?
        let manifestETag: String
        do {
            let stream = try await context.records.get(manifestKey, range: nil)
            manifestETag = stream.info.etag
            manifest = MultipartManifest(parsing: try await stream.body.collect(upTo: MultipartManifest.maxBytes))
        } catch let error as PlugboardError where error.code == .storageNotFound {
            if let restored = try await restoredManifest(context, bucket: bucket, key: key, info: info, replacing: nil) { return restored }
            if info.metadata[S3Namespace.multipartETagKey] != nil {
                context.logger.warning("object \(info.key) has a multipart ETag but no part manifest; its parts are answered as one")
            }
            return nil
        }
        if let manifest, manifest.describes(info, key: key) { return manifest }
        if let restored = try await restoredManifest(context, bucket: bucket, key: key, info: info, replacing: manifestETag) { return restored }
        try await removeStaleManifest(context, manifestKey: manifestKey, objectKey: info.key, key: key)
        return nil
    }

    /// The manifest of `info` made from the completion claim of the upload it names, when
    /// the server stopped after storing the object and before writing its manifest; it is
    /// written then, create-only or over the stale manifest read (`replacing`, its storage
    /// ETag), so that one a later Complete wrote meanwhile is never replaced. Nil when the
    /// object names no upload or the claim is gone or describes another object.
    static func restoredManifest(_ context: S3Context, bucket: String, key: String, info: ObjectInfo,
                                 replacing staleETag: String?) async throws -> MultipartManifest? {
        guard let uploadID = info.metadata[S3Namespace.uploadIDKey], MultipartLayout.isUploadID(uploadID),
              info.metadata[S3Namespace.multipartETagKey] != nil else { return nil }
        let content: [UInt8]
        do {
            content = try await context.records.get(MultipartLayout.completionKey(bucket: bucket, uploadID: uploadID), range: nil)
                .body.collect(upTo: MultipartManifest.maxBytes)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
        guard var manifest = MultipartManifest(parsing: content) else { return nil }
        manifest.etag = info.etag
        guard manifest.describes(info, key: key) else { return nil }
        if let checksum = manifest.objectChecksum, info.metadata[S3Checksum.metadataKey] == nil {
            try await S3ChecksumRecord.write(context, checksum, describing: info, at: MultipartLayout.checksumKey(bucket: bucket, key: key))
        }
        manifest.objectChecksum = nil
        let manifestKey = MultipartLayout.manifestKey(bucket: bucket, key: key)
        do {
            _ = try await context.records.put(manifestKey, data: manifest.encoded(), contentType: "text/plain", metadata: [:],
                                              condition: staleETag.map { .matches(etag: $0) } ?? .absent)
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            // Another wrote the manifest meanwhile: this read still answers from the claim.
        } catch let error as PlugboardError where error.code == .storageUnsupported {
            _ = try await context.records.put(manifestKey, data: manifest.encoded(), contentType: "text/plain", metadata: [:])
        }
        context.logger.notice("part manifest of \(info.key) written from upload \(uploadID)'s completion claim (the server stopped between storing the object and its manifest)")
        return manifest
    }

    /// Removes a manifest that no longer describes its object, unless a completion wrote
    /// the object and its manifest anew since the object was read.
    static func removeStaleManifest(_ context: S3Context, manifestKey: String, objectKey: String, key: String) async throws {
        let current: ObjectInfo?
        do {
            current = try await context.storage.head(objectKey)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            current = nil
        }
        if let current, let content = try? await context.records.get(manifestKey, range: nil).body.collect(upTo: 1024 * 1024),
           let manifest = MultipartManifest(parsing: content), manifest.describes(current, key: key) {
            return
        }
        context.logger.info("part manifest \(manifestKey) no longer describes its object; removed")
        try? await context.records.delete(manifestKey)
    }

    /// Every storage key of the upload: its parts and their checksum records, then its
    /// completion claim, then its record (last, so that a clean-up cut short leaves an
    /// upload that can still be aborted or completed again). The claim outlives the parts:
    /// a Complete with another list that finds it gone finds the parts gone too, and
    /// cannot store an object over the one that was answered.
    static func pieces(_ context: S3Context, bucket: String, uploadID: String) async throws -> [String] {
        let folder = MultipartLayout.folder(bucket: bucket, uploadID: uploadID)
        let record = MultipartLayout.recordKey(bucket: bucket, uploadID: uploadID)
        let claim = MultipartLayout.completionKey(bucket: bucket, uploadID: uploadID)
        var keys: [String] = []
        var claimed = false
        var token: String?
        repeat {
            let page = try await context.records.list(prefix: folder, limit: ListingRequest.maxLimit, continuationToken: token)
            for key in page.objects.map(\.key) where !ObjectKey.isSame(key, as: record) {
                if ObjectKey.isSame(key, as: claim) { claimed = true } else { keys.append(key) }
            }
            token = page.nextContinuationToken
        } while token != nil
        return keys + (claimed ? [claim] : []) + [record]
    }

    /// Deletes every piece of the upload, the record last (so that a removal cut short can
    /// be asked for again), then looks once more: an UploadPart that found the record
    /// stores its part before it answers, so a part stored after the first look is listed
    /// by the second, and one stored later finds no record and removes itself
    /// (``confirmStillOpen(_:bucket:uploadID:partKey:)``). Whichever host each request
    /// went through, nothing of the upload is left.
    static func removePieces(_ context: S3Context, bucket: String, uploadID: String) async throws {
        for key in try await pieces(context, bucket: bucket, uploadID: uploadID) { try await context.records.delete(key) }
        // The record, which `pieces` names last, is gone already.
        for key in try await pieces(context, bucket: bucket, uploadID: uploadID).dropLast() { try await context.records.delete(key) }
    }

    /// Deletes what is left of a completed upload. Failures are logged: the object is
    /// complete, and a repeated Complete or a listing finishes the job.
    static func removeUpload(_ context: S3Context, bucket: String, uploadID: String) async {
        do {
            try await removePieces(context, bucket: bucket, uploadID: uploadID)
        } catch {
            context.logger.warning("could not remove all of upload \(uploadID) after completing it: \(error)")
        }
    }

    /// One `<Part>` of a CompleteMultipartUpload document.
    struct CompletionPart: Sendable {
        var number: Int
        var etag: String
        var checksum: S3Checksum?
    }

    /// The parts a CompleteMultipartUpload document lists, checked in ascending order.
    static func parseCompletion(_ document: [UInt8]) throws(S3Error) -> [CompletionPart] {
        let root = try S3XMLReader.parse(document)
        guard root.name == "CompleteMultipartUpload" else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected <CompleteMultipartUpload>, found <\(root.name.prefix(64))>.")
        }
        let elements = root.children("Part")
        guard !elements.isEmpty else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected at least one <Part>, found none.")
        }
        guard elements.count <= MultipartLayout.maxPartNumber else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected at most \(MultipartLayout.maxPartNumber) parts, found \(elements.count).")
        }
        var parts: [CompletionPart] = []
        for element in elements {
            guard let text = element.text("PartNumber"), let number = Int(text), (1...MultipartLayout.maxPartNumber).contains(number) else {
                throw S3Error.invalidArgument("Part number must be an integer between 1 and \(MultipartLayout.maxPartNumber), inclusive: found \"\((element.text("PartNumber") ?? "none").prefix(32))\".",
                                              name: "PartNumber")
            }
            guard var etag = element.text("ETag"), !etag.isEmpty else {
                throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected an <ETag> in part \(number), found none.")
            }
            if etag.utf8.count >= 2, etag.hasPrefix("\""), etag.hasSuffix("\"") { etag = String(etag.dropFirst().dropLast()) }
            if let previous = parts.last, number <= previous.number {
                throw S3Error.invalidPartOrder("The list of parts was not in ascending order. Parts must be ordered by part number: expected a part number above \(previous.number), found \(number).")
            }
            // A part's checksum as the client lists it (`<ChecksumCRC32>`), to compare with the kept one.
            var checksum: S3Checksum?
            for algorithm in ChecksumAlgorithm.allCases {
                if let value = element.text("Checksum" + algorithm.displayName) {
                    checksum = S3Checksum(algorithm: algorithm, value: ASCIIText.trimmed(value), type: .fullObject)
                }
            }
            parts.append(CompletionPart(number: number, etag: etag.lowercased(), checksum: checksum))
        }
        return parts
    }

    /// `x-amz-copy-source`: `bucket/key` or `/bucket/key`, percent-encoded, with an
    /// optional `?versionId=` (only `null`, the one version this server keeps).
    static func parseCopySource(_ header: String) throws(S3Error) -> (bucket: String, key: String) {
        var text = Substring(header)
        if let question = text.firstIndex(of: "?") {
            let query = text[text.index(after: question)...]
            text = text[..<question]
            guard query.hasPrefix("versionId="), query.dropFirst("versionId=".count) == "null" else {
                throw S3Error.notImplemented("x-amz-copy-source with a version (found \"\(query.prefix(64))\")")
            }
        }
        if text.hasPrefix("/") { text = text.dropFirst() }
        let decoded: [UInt8]
        do throws(HTTPError) {
            decoded = try PercentDecoding.decode(text)
        } catch {
            throw S3Error.invalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey, percent-encoded; found a bad escape in \"\(header.prefix(256))\".",
                                          name: "x-amz-copy-source", value: header)
        }
        guard let slash = decoded.firstIndex(of: UInt8(ascii: "/")), slash > 0, slash < decoded.count - 1,
              let bucket = String(validating: decoded[..<slash], as: UTF8.self),
              let key = String(validating: decoded[(slash + 1)...], as: UTF8.self) else {
            throw S3Error.invalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey; found \"\(header.prefix(256))\".",
                                          name: "x-amz-copy-source", value: header)
        }
        return (bucket, key)
    }

    /// `x-amz-copy-source-range: bytes=first-last`, both given, as S3 takes it.
    static func parseCopySourceRange(_ header: String) throws(S3Error) -> (first: Int, last: Int) {
        let refusal = S3Error.invalidArgument("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy: found \"\(header.prefix(128))\".",
                                              name: "x-amz-copy-source-range", value: header)
        guard header.hasPrefix("bytes=") else { throw refusal }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2, spec.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 18 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
              let first = Int(spec[0]), let last = Int(spec[1]), first <= last else { throw refusal }
        return (first, last)
    }

    static func owner(_ xml: inout S3XMLWriter, _ element: String, _ id: String) {
        xml.open(element)
        xml.element("ID", id)
        xml.element("DisplayName", id)
        xml.close(element)
    }

    static func xmlResponse(_ xml: consuming S3XMLWriter, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/xml")], body: xml.finish())
    }

    static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }
}
