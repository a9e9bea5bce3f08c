import PlugboardAPI
import PlugboardCrypto
import PlugboardHTTPClient

/// A GetObject answer's body as it comes off the connection, for ``S3Storage/get(_:range:)``:
/// PlugboardHTTPClient's ``CheckedResponseBody`` holds it to the object's (or its range's)
/// length and, for a whole object whose ETag is its MD5, to that MD5; here its failures
/// become storage errors that say how far the body got.
extension S3HTTPClient {
    /// - Parameter etag: The MD5 the whole body must hash to; nil for a range, or an ETag
    ///   that is not an MD5.
    func checkedBody(_ stream: PlainHTTPTransport.ResponseBody, length: Int, etag: String?,
                     _ operation: S3Operation) throws(PlugboardError) -> ObjectBody {
        let body = try S3Storage.digest { () throws(CryptoError) in try CheckedResponseBody(stream, length: length, etag: etag) }
        return ObjectBody(length: length) { [self] in try await reading(operation) { try await body.next() } }
    }

    /// Runs `read`, with a ``CheckedResponseBody/Failure`` as the storage error naming the
    /// bytes expected and received, or `CancellationError` once the task is cancelled.
    func reading(_ operation: S3Operation, _ read: () async throws -> [UInt8]?) async throws -> [UInt8]? {
        do {
            return try await read()
        } catch let failure as CheckedResponseBody.Failure {
            let (length, total) = (failure.expected, failure.received)
            switch failure.kind {
            case .transport(let transport):
                throw try bodyFailure(transport, operation, expected: length, received: total)
            case .endedShort:
                throw bodyFailure(.badResponse(expected: "\(length) bytes of chunked body", found: "its last chunk after \(total)"),
                                  operation, expected: length, received: total)
            case .ranLong:
                throw PlugboardError(.storageFailed, "\(operation.description) failed: the answer is longer than announced",
                                     detail: "Expected \(length) bytes, received at least \(total).",
                                     hint: "Check that \"endpoint\" is an S3-compatible server.")
            case .digestMismatch(let etag, let md5):
                throw S3Storage.etagMismatch(operation, etag: etag, count: length, md5: md5)
            case .digestUnavailable(let crypto):
                throw try S3Storage.digest { () throws(CryptoError) -> PlugboardError in throw crypto }
            }
        }
    }

    /// Why a streamed answer's body broke off, from the transport's failure; a
    /// cancellation comes back as `CancellationError`.
    func bodyFailure(_ failure: TransportFailure, _ operation: S3Operation, expected: Int?, received: Int) throws -> PlugboardError {
        if Task.isCancelled { throw CancellationError() }
        let error = failure.cause as? PlainHTTPError ?? .connectionLost(failure.description)
        return bodyFailure(error, operation, expected: expected, received: received)
    }
}
