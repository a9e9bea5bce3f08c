import PlugboardAPI
import PlugboardHTTPClient
import PlugboardConcurrency
import PlugboardCrypto

extension RESTStorage {
    /// How much of a streamed body is gathered before each send: 256 KiB, so that a body
    /// of many small chunks does not cost a hop to the socket's queue per chunk.
    static let sendBytes = 256 * 1024

    /// A PUT whose body goes to the server as it is read, announcing `length` bytes, or
    /// chunked when the length is not known.
    ///
    /// The last piece is held back until the body has ended with exactly its length
    /// (``ObjectBody/forEachChunk(upTo:_:)`` checks it), and a chunked body's last chunk
    /// is sent only after its end, so a body that throws, is cancelled, or turns out
    /// shorter or longer than announced never completes the request: the connection
    /// closes with the body incomplete, and the server, which stores a PUT only when the
    /// whole message has arrived, stores nothing and leaves any previous object as it was. The MD5 is computed as the pieces pass and
    /// checked against the ETag the server answers.
    ///
    /// Retried as a whole PUT is, but only while nothing of the body was read (a refused
    /// connection): after that the body is gone.
    func streamedPut(_ key: String, _ body: ObjectBody, over plain: PlainHTTPTransport, length: Int?, contentType: String,
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
        // The bytes the body yielded: its length, known only at its end when chunked.
        var size = 0
        let (response, _, mapping) = try await exchange(request, operation: "put", key: key, mayRetry: { !read.withLock { $0 } }) { request in
            let response = try await plain.upload(request, length: length, expectsContinue: true) { writer in
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
                    // Unknown length: the server's --max-body-bytes is the bound, and its 413
                    // comes back as the answer.
                    size = try await body.forEachChunk(upTo: length ?? Int.max) { chunk in
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
            return try storedInfo(answer, key: key, size: size, etag: etag, contentType: contentType, metadata: metadata)
        }
    }

    /// A GET whose body is read from the connection a piece at a time as the caller reads
    /// the stream (a ``CheckedResponseBody``); an empty body, an error's, and the whole object
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
            // A server that ignored the Range header sends the whole object: the range's
            // bytes are passed on as they arrive and the rest is never read.
            let info = try answer.decode { answer throws(UnexpectedResponse) in
                try ResponseDecoding.headerInfo(answer, key: key, size: length)
            }
            guard let offsets = range.resolve(size: length) else {
                throw PlugboardError.rangeNotSatisfiable(key: key, range: range, size: length)
            }
            let whole = try mapping.checkedBody(stream, length: length, etag: nil)
            return ObjectStream(info: info, range: offsets, body: Self.slice(whole, offsets, mapping))
        }
        guard let range else {
            let info = try answer.decode { answer throws(UnexpectedResponse) in
                try ResponseDecoding.headerInfo(answer, key: key, size: length)
            }
            let body = try mapping.checkedBody(stream, length: length, etag: info.etag)
            return ObjectStream(info: info, range: nil, body: mapping.objectBody(body, length: length))
        }
        let (info, offsets) = try answer.decode { answer throws(UnexpectedResponse) in
            try Self.rangeInfo(answer, key: key, range: range, sent: length)
        }
        let body = try mapping.checkedBody(stream, length: length, etag: nil)
        return ObjectStream(info: info, range: offsets, body: mapping.objectBody(body, length: length))
    }

    /// The bytes at `offsets` of a whole object's body as it arrives: those before them
    /// skipped, those in them passed on (a piece wholly inside without a copy), nothing read
    /// after them. The consumer then drops the body, and with it the connection, which is
    /// not reused with the rest of the object unread.
    static func slice(_ whole: CheckedResponseBody, _ offsets: Range<Int>, _ mapping: FailureMapping) -> ObjectBody {
        // The offset in the whole object of the next byte `whole` yields.
        let position = LockedValueBox(0)
        return ObjectBody(length: offsets.count) {
            while true {
                let at = position.withLock { $0 }
                guard at < offsets.upperBound, let chunk = try await mapping.reading({ try await whole.next() }) else { return nil }
                position.withLock { $0 = at + chunk.count }
                let lower = max(offsets.lowerBound, at), upper = min(offsets.upperBound, at + chunk.count)
                if lower == at && upper == at + chunk.count { return chunk }
                if lower < upper { return Array(chunk[(lower - at)..<(upper - at)]) }
            }
        }
    }

    /// A streamed GET's answer whose body came whole (it was empty).
    private static func wholeStream(_ answer: Answer, key: String, range: ByteRange?) throws(PlugboardError) -> ObjectStream {
        guard let range else { return try ObjectStream(checkedObject(answer, key: key), key: key, range: nil) }
        return try rangeStream(answer, key: key, range: range)
    }
}
