import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// PutObject, GetObject, HeadObject and DeleteObject.
enum ObjectOperations {
    /// GetObject's query items that replace a header of the answer, and the header each sets.
    static let responseOverrides: [(query: String, header: String)] = [
        ("response-content-type", "Content-Type"),
        ("response-content-language", "Content-Language"),
        ("response-expires", "Expires"),
        ("response-cache-control", "Cache-Control"),
        ("response-content-disposition", "Content-Disposition"),
        ("response-content-encoding", "Content-Encoding"),
    ]

    /// `PUT /bucket/key`: the body goes to the storage as it arrives (already checked
    /// against its digests by the router's decoder, which throws before the end when a
    /// check fails, so nothing is stored). `If-None-Match: *` and `If-Match` are the
    /// storage's atomic conditions.
    static func putObject(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let contentType = request.header("content-type").flatMap { $0.isEmpty ? nil : $0 }
        var metadata = try S3Objects.metadata(fromHeaders: request.head.headers.fields)
        // A checksum the header names is kept with the bytes; one in the trailer beside them.
        let sent = S3Checksum.declared(in: request.head.headers)
        let declared = sent.flatMap { S3Objects.keep($0, in: &metadata) ? $0 : nil }
        // With no checksum in a header or announced in a trailer, S3 computes a CRC64NVME of
        // its own (since 2025), as the bytes pass; known after the put took the metadata,
        // so it is kept beside the object as a trailer's is.
        let running = sent == nil && request.header("x-amz-trailer") == nil
            ? try RunningChecksum(.crc64nvme, over: request.body) : nil
        let info = try await S3Objects.writing(into: bucket, context) { landed in
            let condition = try await writeCondition(context, request, storageKey: storageKey, key: key)
            return landed.landed(try await conditionally(request) {
                try await context.storage.put(storageKey, body: running?.body(length: request.body.length) ?? request.body,
                                              contentType: contentType, metadata: metadata, condition: condition)
            })
        }
        let computed = try running?.finish()
        if declared == nil, let checksum = computed ?? S3Checksum.verified(request.verifiedChecksums) {
            try await S3ChecksumRecord.write(context, checksum, describing: info, at: MultipartLayout.checksumKey(bucket: bucket, key: key))
        }
        // The checksums the body was checked against, from a header or the trailer, as S3
        // answers them (a client that sent one may check the answer's), or the one computed.
        return HTTPResponse(status: 200, headers: [("ETag", S3Objects.etag(info))] + request.verifiedChecksums.answerHeaders
                                + (computed?.answerHeaders ?? []))
    }

    /// Runs `write`, a put made with ``writeCondition(_:_:storageKey:key:)``'s condition,
    /// and answers the storage's refusal of that condition as S3's 412, naming the
    /// request's header (the storage's own text names its key).
    static func conditionally<R>(_ request: S3Request, _ write: () async throws -> R) async throws -> R {
        do {
            return try await write()
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            let header = request.header("if-match") != nil ? "If-Match" : "If-None-Match"
            var refusal = S3Error.preconditionFailed(header)
            refusal.message += header == "If-Match"
                ? " Expected the object to be the one whose ETag was checked, found that another write replaced it meanwhile."
                : " Expected no object under the key (If-None-Match: *), found one."
            throw refusal
        }
    }

    /// The storage's condition for a PUT: `If-None-Match: *` is `.absent`; `If-Match` is
    /// checked against the current object's S3 ETag (which differs from the storage's for
    /// an object completed from parts) and the write then made conditional on that very
    /// object, so the check and the store stay one atomic step.
    static func writeCondition(_ context: S3Context, _ request: S3Request, storageKey: String,
                               key: String) async throws -> WriteCondition {
        let ifNoneMatch = request.header("if-none-match")
        let ifMatch = request.header("if-match")
        if let ifNoneMatch, ASCIIText.trimmed(Substring(ifNoneMatch)) != "*" {
            throw S3Error.notImplemented("If-None-Match on PUT with a value other than * (found \(ifNoneMatch.prefix(80)))")
        }
        guard let ifMatch else { return ifNoneMatch == nil ? .none : .absent }
        if ifNoneMatch != nil {
            throw S3Error.preconditionFailed("If-Match and If-None-Match")
        }
        let current: ObjectInfo
        do {
            current = try await context.storage.head(storageKey)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            throw S3Error.noSuchKey(key)
        }
        guard let tags = S3Conditions.tags([ifMatch]), S3Conditions.matches(tags, S3Objects.etag(current), weak: false) else {
            throw S3Conditions.failure("If-Match", current)
        }
        return .matches(etag: current.etag)
    }

    /// `GET /bucket/key`: conditions first (RFC 9110 section 13.2.2), then one range
    /// (206, or 416 with `Content-Range: bytes */size`); several ranges or an invalid
    /// `Range` get the whole object (200), as S3 answers. Bodies over 256 KiB stream from
    /// the storage as the client reads.
    static func getObject(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let conditions = S3Conditions(request.head.headers)
        let overrides = try overrideHeaders(request)
        let range = requestedRange(request)
        // The bucket's marker is asked beside the object, not before it: a read of a
        // bucket that does not exist is NoSuchBucket, at no added latency.
        async let bucketExists = S3Objects.bucketExists(context, bucket)
        let stream: ObjectStream
        do {
            stream = try await context.storage.get(storageKey, range: range)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            throw try await bucketExists ? S3Error.noSuchKey(key) : S3Error.noSuchBucket(bucket)
        } catch let error as PlugboardError where error.code == .storageRangeNotSatisfiable {
            let info = try await headForRead(context, bucket: bucket, key: key, storageKey: storageKey)
            if let refusal = try conditions.readRefusal(info) { return refusal }
            throw S3Error.invalidRange(size: info.size)
        }
        // A refused read drops the stream unread; the storage's open file goes with it.
        guard try await bucketExists else { throw S3Error.noSuchBucket(bucket) }
        if let refusal = try conditions.readRefusal(stream.info) { return refusal }
        var status = 200
        var headers = S3Objects.headers(for: stream.info)
        if let offsets = stream.range, !offsets.isEmpty {
            status = 206
            headers.append(("Content-Range", "bytes \(offsets.lowerBound)-\(offsets.upperBound - 1)/\(stream.info.size)"))
        } else if let checksum = try await askedChecksum(context, request, bucket: bucket, key: key, info: stream.info) {
            headers += checksum.answerHeaders
        }
        apply(overrides, to: &headers)
        let length = stream.body.length ?? stream.range?.count ?? stream.info.size
        if length <= S3OperationSupport.wholeAnswerBytes {
            return HTTPResponse(status: status, headers: headers, body: try await stream.body.collect(upTo: length))
        }
        return HTTPResponse(status: status, headers: headers, stream: ResponseStream(length: length, body: stream.body))
    }

    /// GetObject answered on the caller's thread when nothing has to wait, with the answer
    /// ``getObject(_:_:)`` gives (``readWithoutWaiting(_:_:range:)`` says when).
    static func getObjectWithoutWaiting(_ context: S3Context, _ request: S3Request) throws -> HTTPResponse? {
        guard let (ready, overrides) = try readWithoutWaiting(context, request, range: requestedRange(request)) else { return nil }
        if let refusal = try S3Conditions(request.head.headers).readRefusal(ready.info) { return refusal }
        var status = 200
        var headers = S3Objects.headers(for: ready.info)
        if let offsets = ready.range, !offsets.isEmpty {
            status = 206
            headers.append(("Content-Range", "bytes \(offsets.lowerBound)-\(offsets.upperBound - 1)/\(ready.info.size)"))
        }
        apply(overrides, to: &headers)
        return HTTPResponse(status: status, headers: headers, body: ready.bytes)
    }

    /// `HEAD /bucket/key`: GET's headers and conditions, no body. A `Range` is answered
    /// as GET would (206 with `Content-Range` and the range's length), as S3 does.
    static func headObject(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let overrides = try overrideHeaders(request)
        let info = try await headForRead(context, bucket: bucket, key: key, storageKey: storageKey)
        switch try headAnswer(info, request) {
        case .refused(let refusal):
            return refusal
        case .answer(let status, var headers, let length):
            if status == 200, let checksum = try await askedChecksum(context, request, bucket: bucket, key: key, info: info) {
                headers += checksum.answerHeaders
            }
            apply(overrides, to: &headers)
            return HTTPResponse(status: status, headers: headers, headLength: length)
        }
    }

    /// HeadObject answered on the caller's thread when nothing has to wait, with the answer
    /// ``headObject(_:_:)`` gives: the object's first byte read at once brings its whole
    /// `ObjectInfo`, all a HEAD answers with (an empty object, with no first byte, is the
    /// task's).
    static func headObjectWithoutWaiting(_ context: S3Context, _ request: S3Request) throws -> HTTPResponse? {
        guard let (ready, overrides) = try readWithoutWaiting(context, request, range: .closed(first: 0, last: 0)) else {
            return nil
        }
        switch try headAnswer(ready.info, request) {
        case .refused(let refusal):
            return refusal
        case .answer(let status, var headers, let length):
            apply(overrides, to: &headers)
            return HTTPResponse(status: status, headers: headers, headLength: length)
        }
    }

    /// The read a GetObject or HeadObject answered at once is made of, and the answer's
    /// overriding headers, when nothing has to wait: the bucket trusted by the endpoint's
    /// gate (seen within its second) and the storage's bytes there at once
    /// (``ObjectStorage/getWithoutWaiting(_:range:)``). Nil, for the task, when either
    /// would wait, for a part or a kept checksum asked, and when the storage answers an
    /// error (a missing key's answer depends on the bucket's).
    private static func readWithoutWaiting(_ context: S3Context, _ request: S3Request,
                                           range: ByteRange?) throws -> (ReadyObject, [(String, String)])? {
        guard !request.has("partNumber"), request.header("x-amz-checksum-mode") == nil else { return nil }
        let (bucket, key) = try names(request)
        guard context.buckets.recentlySeen(bucket, in: context.storage) else { return nil }
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let overrides = try overrideHeaders(request)
        do throws(PlugboardError) {
            guard let ready = try context.storage.getWithoutWaiting(storageKey, range: range) else { return nil }
            return (ready, overrides)
        } catch {
            return nil
        }
    }

    private enum HeadAnswer {
        case refused(HTTPResponse)
        case answer(status: Int, headers: [(String, String)], length: Int)
    }

    /// HeadObject's status, headers and length for the object `info` describes, before a
    /// checksum and the overrides: its conditions, and a `Range` answered as GET would.
    private static func headAnswer(_ info: ObjectInfo, _ request: S3Request) throws -> HeadAnswer {
        if let refusal = try S3Conditions(request.head.headers).readRefusal(info) { return .refused(refusal) }
        var headers = S3Objects.headers(for: info)
        var status = 200
        var length = info.size
        if let range = requestedRange(request) {
            guard let offsets = range.resolve(size: info.size) else { throw S3Error.invalidRange(size: info.size) }
            if !offsets.isEmpty {
                status = 206
                length = offsets.count
                headers.append(("Content-Range", "bytes \(offsets.lowerBound)-\(offsets.upperBound - 1)/\(info.size)"))
            }
        }
        return .answer(status: status, headers: headers, length: length)
    }

    /// `DELETE /bucket/key`: 204, whether or not an object was there.
    static func deleteObject(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let (bucket, key) = try names(request)
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        try await S3Objects.requireBucket(context, bucket)
        try await context.storage.delete(storageKey)
        // The part manifest of an object completed from parts would describe nothing now.
        try await MultipartOperations.forgetParts(context, bucket: bucket, key: key)
        return HTTPResponse(status: 204)
    }

    // MARK: Pieces

    /// The object's head for a read (HeadObject, GetObjectAttributes), the bucket asked
    /// beside it: `NoSuchBucket` when the bucket is gone, else `NoSuchKey` for a missing object.
    static func headForRead(_ context: S3Context, bucket: String, key: String, storageKey: String) async throws -> ObjectInfo {
        async let bucketExists = S3Objects.bucketExists(context, bucket)
        let info: ObjectInfo
        do {
            info = try await context.storage.head(storageKey)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            throw try await bucketExists ? S3Error.noSuchKey(key) : S3Error.noSuchBucket(bucket)
        }
        guard try await bucketExists else { throw S3Error.noSuchBucket(bucket) }
        return info
    }

    /// The object's kept checksum when the request asks for it (`x-amz-checksum-mode:
    /// ENABLED`); a read of part of an object answers none, as S3.
    static func askedChecksum(_ context: S3Context, _ request: S3Request, bucket: String, key: String,
                              info: ObjectInfo) async throws -> S3Checksum? {
        guard request.header("x-amz-checksum-mode")?.uppercased() == "ENABLED" else { return nil }
        return try await S3ChecksumRecord.stored(context, for: info, recordKey: MultipartLayout.checksumKey(bucket: bucket, key: key))
    }

    static func names(_ request: S3Request) throws(S3Error) -> (bucket: String, key: String) {
        guard let bucket = request.bucket, !bucket.isEmpty else {
            throw S3Error.invalidRequest("This operation is on an object: expected a bucket name in the path or host, found none.")
        }
        guard let key = request.key, !key.isEmpty else {
            throw S3Error.invalidRequest("This operation is on an object: expected a key after the bucket, found none.")
        }
        return (bucket, key)
    }

    /// The one range of a `Range` header; nil for none, several (S3 then answers the
    /// whole object) or one that does not parse (ignored, RFC 9110 section 14.2).
    static func requestedRange(_ request: S3Request) -> ByteRange? {
        let values = request.head.headers.values("range")
        guard values.count == 1, case .single(let one) = ByteRange.parse(header: values[0]) else { return nil }
        return one
    }

    /// The `response-*` query items, checked: printable text, as a header value must be.
    static func overrideHeaders(_ request: S3Request) throws(S3Error) -> [(String, String)] {
        var headers: [(String, String)] = []
        for (query, header) in responseOverrides {
            guard let value = request.query(query) else { continue }
            guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                throw S3Error.invalidArgument("Expected \(query) to be text a header can carry, found control characters.", name: query, value: value)
            }
            headers.append((header, value))
        }
        return headers
    }

    /// The answer's headers with `overrides` replacing (or adding) theirs.
    static func apply(_ overrides: [(String, String)], to headers: inout [(String, String)]) {
        for (name, value) in overrides {
            let lower = name.lowercased()
            headers.removeAll { $0.0.lowercased() == lower }
            headers.append((name, value))
        }
    }
}
