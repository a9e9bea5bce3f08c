import PlugboardAPI
import PlugboardConcurrency
import PlugboardCrypto

extension RESTStorage {
    /// How much of a streamed body is gathered before each send: 256 KiB, so that a body
    /// of many small chunks does not cost a hop to the socket's queue per chunk.
    static let sendBytes = 256 * 1024

    /// A PUT whose body goes to the server as it is read, announcing `length` bytes.
    ///
    /// The last piece is held back until the body has ended with exactly its length
    /// (``ObjectBody/forEachChunk(upTo:_:)`` checks it), so a body that throws, is
    /// cancelled, or turns out shorter or longer than announced never completes the
    /// request: the connection closes with the body incomplete, and the server, which
    /// stores a PUT only when all of its Content-Length bytes arrive, stores nothing and
    /// leaves any previous object as it was. The MD5 is computed as the pieces pass and
    /// checked against the ETag the server answers.
    ///
    /// Retried as a whole PUT is, but only while nothing of the body was read (a refused
    /// connection): after that the body is gone.
    func streamedPut(_ key: String, _ body: ObjectBody, over plain: PlainHTTPTransport, length: Int, contentType: String,
                     metadata: [String: String], headers extra: [(name: String, value: String)]) async throws -> ObjectInfo {
        let headers = [(name: "Content-Type", value: contentType)] + MetadataHeaders.fields(metadata) + extra
        let request = makeRequest(.put, configuration.endpoint.object(key), headers: headers)
        let hasher: StreamingMD5
        do {
            hasher = try StreamingMD5.started()
        } catch {
            throw PlugboardError(.storageFailed, "cannot compute the MD5 of the body of \(RESTStorageText.quote(key))",
                                 detail: "Expected an MD5 digest from libcrypto, found: \(error.message).",
                                 hint: "RESTStorage needs OpenSSL's libcrypto.so.3 (Debian: apt-get install libssl3).")
        }
        let read = LockedValueBox(false)
        let (response, _, mapping) = try await exchange(request, operation: "put", key: key, mayRetry: { !read.withLock { $0 } }) { request in
            let response = try await plain.upload(request, length: length) { writer in
                read.withLock { $0 = true }
                var pending: [UInt8] = []
                // The socket's errors go to the transport as they are (it may hear the
                // server's early answer instead); the body's own pass through unchanged.
                var sendFailed = false
                func send() async throws {
                    do {
                        try await writer.send(pending)
                        pending = []
                    } catch {
                        sendFailed = true
                        throw error
                    }
                }
                do {
                    try await body.forEachChunk(upTo: length) { chunk in
                        hasher.update(chunk)
                        if pending.count >= Self.sendBytes { try await send() }
                        pending += chunk
                    }
                } catch where !sendFailed && !(error is CancellationError) {
                    throw BodyFailure(underlying: error)
                }
                if !pending.isEmpty { try await send() }
            }
            return (response, ())
        }
        let answer = Answer(response: response, mapping: mapping)
        guard Self.putSuccess.contains(response.status) else { throw mapping.error(for: response, expected: Self.putExpected) }
        return try answer.decode { answer throws(UnexpectedResponse) in
            let etag = try Self.hashing { () throws(CryptoError) in try hasher.finish() }
            return try storedInfo(answer, key: key, size: length, etag: etag, contentType: contentType, metadata: metadata)
        }
    }

    /// A GET whose body is read from the connection a piece at a time as the caller reads
    /// the stream (``RESTStreamedBody``); an empty body, an error's, and the whole object
    /// sent for a range the server ignored are read whole.
    func streamedGet(_ key: String, range: ByteRange?, over plain: PlainHTTPTransport) async throws -> ObjectStream {
        let headers = range.map { [(name: "Range", value: Self.rangeHeader($0))] } ?? []
        let request = makeRequest(.get, configuration.endpoint.object(key), headers: headers)
        let (response, stream, mapping) = try await exchange(request, operation: "get", key: key) { request in
            try await plain.open(request)
        }
        let success: Set<Int> = range == nil ? [200] : Self.rangeSuccess
        let expected = range == nil ? Self.getExpected : Self.rangeExpected
        guard success.contains(response.status) else { throw mapping.error(for: response, expected: expected) }
        guard let stream else { return try Self.wholeStream(Answer(response: response, mapping: mapping), key: key, range: range) }
        guard let length = stream.length else {
            throw mapping.error(for: UnexpectedResponse(expected: "a Content-Length on the object's answer",
                                                        found: "a body without one (chunked or read to the close)"),
                                status: response.status)
        }
        let answer = Answer(response: response, mapping: mapping)
        if let range, response.status == 200 {
            // A server that ignored the Range header sends the whole object: sliced here.
            var whole = response
            whole.body = try await RESTStreamedBody(stream, length: length, etag: nil, mapping: mapping).body
                .collect(upTo: Self.maxBufferedBodyBytes)
            return try Self.rangeStream(Answer(response: whole, mapping: mapping), key: key, range: range)
        }
        guard let range else {
            let info = try answer.decode { answer throws(UnexpectedResponse) in
                try ResponseDecoding.headerInfo(answer, key: key, size: length)
            }
            let body = try RESTStreamedBody(stream, length: length, etag: info.etag, mapping: mapping)
            return ObjectStream(info: info, range: nil, body: body.body)
        }
        let (info, offsets) = try answer.decode { answer throws(UnexpectedResponse) in
            try Self.rangeInfo(answer, key: key, range: range, sent: length)
        }
        return ObjectStream(info: info, range: offsets, body: try RESTStreamedBody(stream, length: length, etag: nil, mapping: mapping).body)
    }

    /// A streamed GET's answer whose body came whole (it was empty).
    private static func wholeStream(_ answer: Answer, key: String, range: ByteRange?) throws(PlugboardError) -> ObjectStream {
        guard let range else { return try ObjectStream(checkedObject(answer, key: key), key: key, range: nil) }
        return try rangeStream(answer, key: key, range: range)
    }
}
