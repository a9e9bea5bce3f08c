import PlugboardAPI
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTPClient

/// A GetObject answer's body as it comes off the connection, for ``S3Storage/get(_:range:)``.
///
/// The plain-HTTP body knows only HTTP's framing; this one also knows how many bytes the
/// object (or its range) has, so a chunked answer that ends early or runs long is refused,
/// and every failure becomes a storage error that says how far the body got. For a whole
/// object whose ETag is its MD5, the last piece is held back until the MD5 of all the
/// bytes matches: a damaged object then ends short for the consumer rather than whole.
final class S3StreamedBody: Sendable {
    private let stream: PlainHTTPResponseBody
    private let length: Int
    private let operation: S3Operation
    private let client: S3HTTPClient
    /// The ETag to check the bytes against, and the MD5 of those that have passed.
    private let check: (etag: String, md5: StreamingMD5)?

    /// - Parameter etag: The MD5 the whole body must hash to; nil for a range, or an ETag
    ///   that is not an MD5.
    init(_ stream: PlainHTTPResponseBody, length: Int, operation: S3Operation, client: S3HTTPClient,
         etag: String?) throws(CryptoError) {
        self.stream = stream
        self.length = length
        self.operation = operation
        self.client = client
        check = try etag.map { etag throws(CryptoError) in (etag, try StreamingMD5.started()) }
    }

    var body: ObjectBody {
        ObjectBody(length: length) { [self] in try await next() }
    }

    /// - Throws: a ``PlugboardError`` (storage) naming the bytes expected and received,
    ///   or `CancellationError`.
    func next() async throws -> [UInt8]? {
        let chunk: [UInt8]?
        do {
            chunk = try await stream.next()
        } catch let error as PlainHTTPError {
            if error == .cancelled || Task.isCancelled { throw CancellationError() }
            throw client.bodyFailure(error, operation, expected: length, received: stream.bytesReceived)
        }
        // What has come off the connection so far: the bytes of every piece handed out.
        let total = stream.bytesReceived
        guard let chunk else {
            guard total == length else {
                throw client.bodyFailure(.badResponse(expected: "\(length) bytes of chunked body", found: "its last chunk after \(total)"),
                                        operation, expected: length, received: total)
            }
            return nil
        }
        guard total <= length else {
            throw PlugboardError(.storageFailed, "\(operation.description) failed: the answer is longer than announced",
                                 detail: "Expected \(length) bytes, received at least \(total).",
                                 hint: "Check that \"endpoint\" is an S3-compatible server.")
        }
        if let check {
            check.md5.update(chunk)
            if total == length { try verify(check) }
        }
        return chunk
    }

    private func verify(_ check: (etag: String, md5: StreamingMD5)) throws {
        let md5 = Hex.encode(try S3Storage.digest { () throws(CryptoError) in try check.md5.finish() })
        guard md5 == check.etag else {
            throw S3Storage.etagMismatch(operation, etag: check.etag, count: length, md5: md5)
        }
    }
}
