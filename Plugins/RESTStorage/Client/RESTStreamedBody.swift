import PlugboardAPI
import PlugboardCrypto

/// A GET answer's body as it comes off the connection, for ``RESTStorage/get(_:range:)``
/// over `http://`.
///
/// The body is framed by its Content-Length, so it can neither run long nor end short
/// without the transport saying so; every such failure becomes a storage error naming
/// the bytes expected and received. For a whole object the last piece is held back until
/// the MD5 of all the bytes matches the ETag: a damaged object then ends short for the
/// consumer rather than whole.
final class RESTStreamedBody: Sendable {
    private let stream: PlainHTTPTransport.ResponseBody
    private let length: Int
    private let mapping: FailureMapping
    /// The ETag to check the bytes against, and the MD5 of those that have passed.
    private let check: (etag: String, md5: StreamingMD5)?

    /// - Parameter etag: The MD5 the whole body must hash to; nil for a range.
    init(_ stream: PlainHTTPTransport.ResponseBody, length: Int, etag: String?, mapping: FailureMapping) throws(PlugboardError) {
        self.stream = stream
        self.length = length
        self.mapping = mapping
        do {
            check = try etag.map { etag throws(CryptoError) in (etag, try StreamingMD5.started()) }
        } catch {
            throw mapping.error(for: UnexpectedResponse(expected: "an MD5 digest from libcrypto", found: error.message), status: 200)
        }
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
        } catch let failure as TransportFailure {
            throw mapping.error(forBody: failure, expected: length, received: stream.bytesReceived)
        }
        guard let chunk else { return nil }
        if let check {
            check.md5.update(chunk)
            if stream.bytesReceived == length {
                let digest = try Self.digest(check.md5, mapping)
                guard digest == check.etag else {
                    throw mapping.error(for: UnexpectedResponse(expected: "a body whose MD5 is the ETag \(check.etag)",
                                                                found: "\(length) bytes with MD5 \(digest)"), status: 200)
                }
            }
        }
        return chunk
    }

    private static func digest(_ md5: StreamingMD5, _ mapping: FailureMapping) throws(PlugboardError) -> String {
        do throws(UnexpectedResponse) {
            return try RESTStorage.hashing { () throws(CryptoError) in try md5.finish() }
        } catch {
            throw mapping.error(for: error, status: 200)
        }
    }
}
