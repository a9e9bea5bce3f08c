import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTP

/// Reads a request's body as the client meant it, checking it on the way.
public enum S3BodyDecoder {
    /// The largest chunk an `aws-chunked` body may declare: S3's SDKs send 64 KiB to a few
    /// MiB; the decoder holds one chunk at a time.
    static let maxChunkSize = 16 << 20
    /// The longest chunk-size line (`10000;chunk-signature=<64 hex>` is 86 bytes).
    static let maxSizeLine = 256
    /// The longest trailer line, and the most trailer bytes in all.
    static let maxTrailerLine = 4096
    static let maxTrailerBytes = 16 << 10

    /// The content the client meant, from the raw request body: aws-chunked framing removed and every chunk
    /// signature checked (signed forms), trailers parsed and their checksum checked, x-amz-content-sha256 (when a
    /// hash), Content-MD5 and any x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256} header checked. The returned
    /// body's length is x-amz-decoded-content-length for aws-chunked (refuse a missing/invalid one), else the raw length.
    /// A failed check throws an S3Error (BadDigest, XAmzContentSHA256Mismatch, SignatureDoesNotMatch, IncompleteBody,
    /// InvalidRequest...) from the iterator's next() BEFORE it returns nil at the end, so a storage put over this body
    /// stores nothing. Header problems detectable up front (malformed Content-MD5, bad checksum header) throw here.
    ///
    /// `verified` receives the `x-amz-checksum-*` values (from a header or the trailer) once
    /// the body has ended and they matched it, for the answer to repeat, as S3 does.
    public static func body(_ raw: RequestBody, headers: HTTPHeaders, authentication: S3Authentication,
                            verified: VerifiedChecksums? = nil) throws(S3Error) -> ObjectBody {
        try decode(ObjectBody(length: raw.length, raw), headers: headers, authentication: authentication, verified: verified)
    }

    /// ``body(_:headers:authentication:)`` over any source of raw chunks (tests feed
    /// bodies split at every point).
    static func decode(_ raw: ObjectBody, headers: HTTPHeaders, authentication: S3Authentication,
                       verified: VerifiedChecksums? = nil) throws(S3Error) -> ObjectBody {
        // Most requests have no body (GET, HEAD, DELETE, listings) and sign the empty
        // body's SHA-256: that is one comparison, with no digest to set up and no reader
        // in front of the body.
        if raw.length == 0, case .sha256(let hex) = authentication.payload, !headers.hasBodyChecksumFields {
            guard hex == SigV4Verifier.emptySHA256 else {
                throw S3Error.xAmzContentSHA256Mismatch(expected: hex, found: SigV4Verifier.emptySHA256)
            }
            return raw
        }
        let trailerMode: Bool
        let chunked: Bool
        switch authentication.payload {
        case .unsigned, .sha256: (chunked, trailerMode) = (false, false)
        case .signedChunks(let trailer): (chunked, trailerMode) = (true, trailer)
        case .unsignedChunksWithTrailer: (chunked, trailerMode) = (true, true)
        }
        let checks = try BodyChecks(headers: headers, payload: authentication.payload, trailerMode: trailerMode)
        guard chunked else {
            if checks.isEmpty { return raw }
            let reader = CheckedBodyReader(raw.makeAsyncIterator(), length: raw.length, checks: checks, verified: verified)
            return ObjectBody(length: raw.length) { try await reader.next() }
        }
        guard let text = headers["x-amz-decoded-content-length"] else {
            throw S3Error("MissingContentLength", status: 411,
                          "You must provide the x-amz-decoded-content-length header with an aws-chunked body (x-amz-content-sha256 STREAMING-*): found none.")
        }
        let trimmed = ASCIIText.trimmed(text)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 18, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int(trimmed) else {
            throw S3Error.invalidArgument(
                "x-amz-decoded-content-length must be the decoded body's length in bytes: found \"\(text.prefix(40))\".",
                name: "x-amz-decoded-content-length", value: text)
        }
        let signing: AWSChunkedParser.Signing?
        if case .signedChunks = authentication.payload {
            signing = AWSChunkedParser.Signing(key: authentication.signingKey, scope: authentication.scope,
                                               amzDate: authentication.amzDate, seed: authentication.seedSignature)
        } else {
            signing = nil
        }
        let parser = AWSChunkedParser(decodedLength: length, signing: signing, trailer: trailerMode)
        let reader = ChunkedBodyReader(raw.makeAsyncIterator(), parser: parser, checks: checks, verified: verified)
        return ObjectBody(length: length) { try await reader.next() }
    }
}

extension HTTPHeaders {
    /// The fields without the `x-amz-checksum-{crc32,...}` values: what the body decoder
    /// reads for a request whose checksum headers do not describe its body
    /// (``S3Operation/checksumHeadersDescribeBody``).
    var withoutChecksumValues: HTTPHeaders {
        HTTPHeaders(fields.filter { field in !ChecksumAlgorithm.allCases.contains { $0.headerName == field.name } })
    }

    /// Whether the request names a digest of its body beside `x-amz-content-sha256`:
    /// `Content-MD5`, an `x-amz-checksum-*` value or an `x-amz-trailer`.
    var hasBodyChecksumFields: Bool {
        // The length first: most names are shorter than the prefix, and String.hasPrefix is
        // not a byte comparison.
        fields.contains { field in
            field.name == "content-md5" || field.name == "x-amz-trailer"
                || (field.name.utf8.count >= 15 && field.name.hasPrefix("x-amz-checksum-"))
        }
    }
}
