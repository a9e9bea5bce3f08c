import PlugboardCrypto

/// An object's body as it comes off the connection, checked against what the object is
/// known to be: RESTStorage's and S3Storage's streamed GET.
///
/// HTTP's framing alone lets a chunked body end early or run long without a broken
/// connection; this body also knows how many bytes the object (or its range) has, and
/// refuses either. For a whole object whose ETag is its MD5, the last piece is held back
/// until the MD5 of all the bytes matches: a damaged object then ends short for the
/// consumer rather than whole. Each plugin turns a ``Failure`` into its own error.
public final class CheckedResponseBody: Sendable {
    /// Why the body is not the object's.
    public struct Failure: Error, Sendable {
        public enum Kind: Sendable {
            /// The connection broke, timed out or framed the body badly.
            case transport(TransportFailure)
            /// The body ended (its last chunk) before `expected` bytes.
            case endedShort
            /// More than `expected` bytes came.
            case ranLong
            /// All the bytes came, and their MD5 (lower-case hex) is not the ETag.
            case digestMismatch(etag: String, md5: String)
            /// libcrypto could not finish the MD5.
            case digestUnavailable(CryptoError)
        }

        public var kind: Kind
        /// The bytes the object (or its range) has.
        public var expected: Int
        /// The body bytes that came off the connection.
        public var received: Int
    }

    private let stream: PlainHTTPTransport.ResponseBody
    private let length: Int
    /// The ETag to check the bytes against, and the MD5 of those that have passed.
    private let check: (etag: String, md5: StreamingMD5)?

    /// - Parameters:
    ///   - length: The bytes the object (or its range) has.
    ///   - etag: The MD5 (lower-case hex) the whole body must hash to; nil for a range,
    ///     or an ETag that is not an MD5.
    /// - Throws: `CryptoError` when libcrypto cannot start an MD5.
    public init(_ stream: PlainHTTPTransport.ResponseBody, length: Int, etag: String?) throws(CryptoError) {
        self.stream = stream
        self.length = length
        check = try etag.map { etag throws(CryptoError) in (etag, try StreamingMD5.started()) }
    }

    /// The body bytes that came off the connection so far.
    public var bytesReceived: Int { stream.bytesReceived }

    /// The next piece of the body, or nil after the last one.
    ///
    /// - Throws: ``Failure``, or `CancellationError`.
    public func next() async throws -> [UInt8]? {
        let chunk: [UInt8]?
        do {
            chunk = try await stream.next()
        } catch let failure as TransportFailure {
            throw Failure(kind: .transport(failure), expected: length, received: stream.bytesReceived)
        }
        let total = stream.bytesReceived
        guard let chunk else {
            guard total == length else { throw Failure(kind: .endedShort, expected: length, received: total) }
            return nil
        }
        guard total <= length else { throw Failure(kind: .ranLong, expected: length, received: total) }
        if let check {
            check.md5.update(chunk)
            if total == length {
                let md5: String
                do throws(CryptoError) {
                    md5 = Hex.encode(try check.md5.finish())
                } catch {
                    throw Failure(kind: .digestUnavailable(error), expected: length, received: total)
                }
                guard md5 == check.etag else {
                    throw Failure(kind: .digestMismatch(etag: check.etag, md5: md5), expected: length, received: total)
                }
            }
        }
        return chunk
    }
}
