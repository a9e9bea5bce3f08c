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

// MARK: Checks of the decoded bytes

extension HTTPHeaders {
    /// Whether the request names a digest of its body beside `x-amz-content-sha256`:
    /// `Content-MD5`, an `x-amz-checksum-*` value or an `x-amz-trailer`.
    var hasBodyChecksumFields: Bool {
        fields.contains { $0.name == "content-md5" || $0.name == "x-amz-trailer" || $0.name.hasPrefix("x-amz-checksum-") }
    }
}

/// The algorithms of S3's `x-amz-checksum-*` headers and trailers.
enum ChecksumAlgorithm: String, CaseIterable, Sendable {
    case crc32, crc32c, crc64nvme, sha1, sha256

    var headerName: String { "x-amz-checksum-\(rawValue)" }
    var byteCount: Int {
        switch self {
        case .crc32, .crc32c: 4
        case .crc64nvme: 8
        case .sha1: 20
        case .sha256: 32
        }
    }
    var displayName: String { rawValue.uppercased() }
}

/// Running digests of the decoded body, and what they must come to.
///
/// `@unchecked Sendable`: owned by one body reader, used by the one task that reads the
/// body (the ObjectBody contract), one call after another.
final class BodyChecks: @unchecked Sendable {
    private var md5: MD5Hasher?
    private var sha1: SHA1Hasher?
    private var sha256: SHA256Hasher?
    private var crc32: CRC32?
    private var crc32c: CRC32C?
    private var crc64: CRC64NVME?

    private let contentMD5: (text: String, bytes: [UInt8])?
    private let contentSHA256: String?
    private let header: (algorithm: ChecksumAlgorithm, text: String, bytes: [UInt8])?
    /// What `x-amz-trailer` announces.
    let trailers: [ChecksumAlgorithm]

    var isEmpty: Bool { contentMD5 == nil && contentSHA256 == nil && header == nil && trailers.isEmpty }

    init(headers: HTTPHeaders, payload: PayloadMode, trailerMode: Bool) throws(S3Error) {
        if let text = headers["content-md5"] {
            let value = ASCIIText.trimmed(text)
            guard let bytes = Base64.decode(value), bytes.count == 16 else {
                throw S3Error("InvalidDigest", status: 400,
                              "The Content-MD5 you specified is not valid: expected the base64 of 16 bytes, found \"\(text.prefix(64))\".",
                              fields: [("Content-MD5", String(text.prefix(64)))])
            }
            contentMD5 = (value, bytes)
        } else {
            contentMD5 = nil
        }
        if case .sha256(let hex) = payload { contentSHA256 = hex } else { contentSHA256 = nil }

        var found: (ChecksumAlgorithm, String, [UInt8])?
        for algorithm in ChecksumAlgorithm.allCases {
            let values = headers.values(algorithm.headerName)
            guard let text = values.first else { continue }
            let value = ASCIIText.trimmed(text)
            guard values.count == 1, let bytes = Base64.decode(value), bytes.count == algorithm.byteCount else {
                throw S3Error.invalidRequest(
                    "Value for \(algorithm.headerName) header is invalid: expected the base64 of \(algorithm.byteCount) bytes, found \"\(text.prefix(64))\"\(values.count > 1 ? " (and \(values.count - 1) more)" : "").")
            }
            if let found {
                throw S3Error.invalidRequest(
                    "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed: found \(found.0.headerName) and \(algorithm.headerName).")
            }
            found = (algorithm, value, bytes)
        }
        header = found.map { (algorithm: $0.0, text: $0.1, bytes: $0.2) }

        var announced: [ChecksumAlgorithm] = []
        for text in headers.values("x-amz-trailer") {
            for name in text.split(separator: ",") {
                let name = ASCIIText.trimmed(name).lowercased()
                guard name.hasPrefix("x-amz-checksum-"), let algorithm = ChecksumAlgorithm(rawValue: String(name.dropFirst(15))) else {
                    throw S3Error.invalidRequest(
                        "The value specified in the x-amz-trailer header is not supported: expected one of \(ChecksumAlgorithm.allCases.map(\.headerName).joined(separator: ", ")), found \"\(name.prefix(64))\".")
                }
                if !announced.contains(algorithm) { announced.append(algorithm) }
            }
        }
        if !announced.isEmpty && !trailerMode {
            throw S3Error.invalidRequest(
                "x-amz-trailer names \(announced.map(\.headerName).joined(separator: ", ")), but x-amz-content-sha256 announces a body without a trailer: expected STREAMING-UNSIGNED-PAYLOAD-TRAILER or STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER.")
        }
        trailers = announced

        do throws(CryptoError) {
            var needed = Set(announced)
            if let header { needed.insert(header.algorithm) }
            if contentSHA256 != nil { needed.insert(.sha256) }
            if contentMD5 != nil { md5 = try MD5Hasher() }
            if needed.contains(.sha1) { sha1 = try SHA1Hasher() }
            if needed.contains(.sha256) { sha256 = try SHA256Hasher() }
            if needed.contains(.crc32) { crc32 = CRC32() }
            if needed.contains(.crc32c) { crc32c = CRC32C() }
            if needed.contains(.crc64nvme) { crc64 = CRC64NVME() }
        } catch {
            throw S3Error.internalError("The server could not start the body's digests: \(error.message).")
        }
    }

    func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            if md5 != nil { md5!.update(buffer) }
            if sha1 != nil { sha1!.update(buffer) }
            if sha256 != nil { sha256!.update(buffer) }
            crc32?.update(buffer)
            crc32c?.update(buffer)
            crc64?.update(buffer)
        }
    }

    /// Checks every digest; `trailer` holds the trailer's `name: value` lines (names
    /// lower-case), for the algorithms `x-amz-trailer` announced. Returns the
    /// `x-amz-checksum-*` values checked, from the header and the trailer.
    func verify(trailer: [(name: String, value: String)]) throws(S3Error) -> [(name: String, value: String)] {
        var checked: [(name: String, value: String)] = []
        var computed: [ChecksumAlgorithm: [UInt8]] = [:]
        var md5Digest: [UInt8]?
        do throws(CryptoError) {
            if let hasher = sha1.take() { computed[.sha1] = try hasher.finalize() }
            if let hasher = sha256.take() { computed[.sha256] = try hasher.finalize() }
            if let crc32 { computed[.crc32] = crc32.bytes }
            if let crc32c { computed[.crc32c] = crc32c.bytes }
            if let crc64 { computed[.crc64nvme] = crc64.bytes }
            if let hasher = md5.take() { md5Digest = try hasher.finalize() }
        } catch {
            throw S3Error.internalError("The server could not compute the body's digests: \(error.message).")
        }
        if let contentMD5 {
            let digest = md5Digest ?? []
            guard digest == contentMD5.bytes else {
                throw S3Error("BadDigest", status: 400,
                              "The Content-MD5 you specified did not match what we received: the header says \(contentMD5.text), the body's MD5 is \(Base64.encode(digest)).",
                              fields: [("ExpectedDigest", contentMD5.text), ("CalculatedDigest", Base64.encode(digest))])
            }
        }
        if let contentSHA256 {
            let found = Hex.encode(computed[.sha256] ?? [])
            guard found == contentSHA256 else { throw S3Error.xAmzContentSHA256Mismatch(expected: contentSHA256, found: found) }
        }
        if let header {
            let found = computed[header.algorithm] ?? []
            guard found == header.bytes else {
                throw S3Error.badDigest(
                    "Value for \(header.algorithm.headerName) header is invalid: the header says \(header.text), the body's \(header.algorithm.displayName) is \(Base64.encode(found)).")
            }
            checked.append((header.algorithm.headerName, header.text))
        }
        for line in trailer where !trailers.contains(where: { $0.headerName == line.name }) {
            throw S3Error("MalformedTrailerError", status: 400,
                          "The request contained trailing data that was not well-formed or did not conform to our published schema: the trailer carries \"\(line.name.prefix(64))\", which x-amz-trailer did not announce (it announced \(trailers.isEmpty ? "none" : trailers.map(\.headerName).joined(separator: ", "))).")
        }
        for algorithm in trailers {
            let lines = trailer.filter { $0.name == algorithm.headerName }
            guard lines.count == 1 else {
                throw S3Error("MalformedTrailerError", status: 400,
                              "The request contained trailing data that was not well-formed or did not conform to our published schema: x-amz-trailer announced \(algorithm.headerName), and the trailer carries it \(lines.count) times (expected once).")
            }
            let value = lines[0].value
            guard let bytes = Base64.decode(value), bytes.count == algorithm.byteCount else {
                throw S3Error.invalidRequest(
                    "Value for \(algorithm.headerName) trailing header is invalid: expected the base64 of \(algorithm.byteCount) bytes, found \"\(value.prefix(64))\".")
            }
            let found = computed[algorithm] ?? []
            guard found == bytes else {
                throw S3Error.badDigest(
                    "Value for \(algorithm.headerName) trailing header is invalid: the trailer says \(value), the body's \(algorithm.displayName) is \(Base64.encode(found)).")
            }
            checked.append((algorithm.headerName, value))
        }
        return checked
    }
}

// MARK: Readers

/// A body without framing: passed through as it arrives, checked at its end.
///
/// `@unchecked Sendable`: read by one task at a time (the ObjectBody contract).
final class CheckedBodyReader: @unchecked Sendable {
    private var upstream: ObjectBody.Iterator
    private let length: Int?
    private let checks: BodyChecks
    private let verified: VerifiedChecksums?
    private var total = 0
    private var finished = false
    private var failure: (any Error)?

    init(_ upstream: ObjectBody.Iterator, length: Int?, checks: BodyChecks, verified: VerifiedChecksums?) {
        self.upstream = upstream
        self.length = length
        self.checks = checks
        self.verified = verified
    }

    func next() async throws -> [UInt8]? {
        if let failure { throw failure }
        if finished { return nil }
        do {
            guard let chunk = try await upstream.next() else {
                if let length, total != length {
                    throw S3Error.incompleteBody(
                        "You did not provide the number of bytes specified by the Content-Length HTTP header: expected \(length), found \(total).")
                }
                let checked = try checks.verify(trailer: [])
                verified?.record(checked)
                finished = true
                return nil
            }
            total += chunk.count
            if let length, total > length {
                throw S3Error.invalidRequest("The body is longer than its Content-Length: expected \(length) bytes, found at least \(total).")
            }
            checks.update(chunk)
            return chunk
        } catch {
            failure = error
            throw error
        }
    }
}

/// The `x-amz-checksum-*` values a body was checked against, once it has ended and they
/// matched: PutObject and UploadPart answer them, whether they came as a header or in an
/// `aws-chunked` trailer (a client that sent a trailer checks the answer's value).
public final class VerifiedChecksums: Sendable {
    private let values = LockedValueBox<[(name: String, value: String)]>([])

    public init() {}

    func record(_ checked: [(name: String, value: String)]) {
        values.withLock { $0 = checked }
    }

    /// The values checked, lower-case names first to last; empty before the body ends.
    public var all: [(name: String, value: String)] { values.withLock { $0 } }

    /// ``all`` as the answer's header fields.
    public var answerHeaders: [(String, String)] { all.map { ($0.name, $0.value) } }
}

/// An `aws-chunked` body: each chunk decoded (and its signature checked) before it is
/// yielded; the checks run when the raw body ends, before the decoded body does.
///
/// `@unchecked Sendable`: read by one task at a time (the ObjectBody contract).
final class ChunkedBodyReader: @unchecked Sendable {
    private var upstream: ObjectBody.Iterator
    private var parser: AWSChunkedParser
    private let checks: BodyChecks
    private let verified: VerifiedChecksums?
    private var finished = false
    private var failure: (any Error)?

    init(_ upstream: ObjectBody.Iterator, parser: AWSChunkedParser, checks: BodyChecks, verified: VerifiedChecksums?) {
        self.upstream = upstream
        self.parser = parser
        self.checks = checks
        self.verified = verified
    }

    func next() async throws -> [UInt8]? {
        if let failure { throw failure }
        do {
            return try await pull()
        } catch {
            failure = error
            throw error
        }
    }

    private func pull() async throws -> [UInt8]? {
        while !finished {
            if let chunk = try parser.step() {
                checks.update(chunk)
                return chunk
            }
            guard let raw = try await upstream.next() else {
                try parser.finish()
                let checked = try checks.verify(trailer: parser.trailers)
                verified?.record(checked)
                finished = true
                return nil
            }
            try parser.feed(raw)
        }
        return nil
    }
}

/// The `aws-chunked` framing (S3's "Transferring Payload in Multiple Chunks"), fed raw
/// pieces split anywhere, giving each chunk's data once it is whole (and, signed, its
/// signature checked):
///
///     hex-size[;chunk-signature=sig]\r\n data \r\n ... 0[;chunk-signature=sig]\r\n
///     \r\n                                              (no trailer)
///     x-amz-checksum-crc32:base64\r\n [x-amz-trailer-signature:sig\r\n] \r\n   (trailer)
struct AWSChunkedParser {
    struct Signing {
        var key: [UInt8]
        var scope: String
        var amzDate: String
        var seed: String
    }

    private enum State { case sizeLine, data, dataEnd, trailer, done }

    private let signing: Signing?
    private let trailerMode: Bool
    private let decodedLength: Int
    private var state = State.sizeLine
    private var input: [UInt8] = []
    private var offset = 0
    private var line: [UInt8] = []
    private var chunk: [UInt8] = []
    private var chunkSize = 0
    private var chunkSignature = ""
    private var chunkIndex = 0
    private var crlfSeen = 0
    private var previousSignature: String
    private var decoded = 0
    private var trailerBytes = 0
    private var trailerCanonical: [UInt8] = []
    private var trailerSignature: String?
    private(set) var trailers: [(name: String, value: String)] = []

    init(decodedLength: Int, signing: Signing?, trailer: Bool) {
        self.decodedLength = decodedLength
        self.signing = signing
        self.trailerMode = trailer
        self.previousSignature = signing?.seed ?? ""
    }

    /// The next raw piece; the previous one must have been used up (``step()`` returned nil).
    mutating func feed(_ bytes: [UInt8]) throws(S3Error) {
        if state == .done, !bytes.isEmpty {
            throw S3Error.invalidRequest("The aws-chunked body goes on after its final chunk: found \(bytes.count) more bytes.")
        }
        input = bytes
        offset = 0
    }

    /// The end of the raw body.
    mutating func finish() throws(S3Error) {
        if state == .trailer, line.isEmpty, signing == nil {
            // The final empty line is missing after complete trailer lines: some clients
            // end there.
            state = .done
        }
        guard state == .done else {
            throw S3Error.incompleteBody(
                "The request body terminated unexpectedly: the aws-chunked body ended \(position) after \(decoded) of the \(decodedLength) bytes x-amz-decoded-content-length announced.")
        }
        guard decoded == decodedLength else {
            throw S3Error.incompleteBody(
                "You did not provide the number of bytes specified by the x-amz-decoded-content-length header: expected \(decodedLength), the chunks carry \(decoded).")
        }
    }

    private var position: String {
        switch state {
        case .sizeLine: "in a chunk-size line"
        case .data: "in chunk \(chunkIndex + 1)'s data"
        case .dataEnd: "before the CRLF after chunk \(chunkIndex + 1)"
        case .trailer: "in the trailer"
        case .done: "at its end"
        }
    }

    /// The next chunk's data, when a whole chunk is here; nil when more input is needed
    /// (or the body is complete).
    mutating func step() throws(S3Error) -> [UInt8]? {
        while offset < input.count {
            switch state {
            case .done:
                throw S3Error.invalidRequest("The aws-chunked body goes on after its final chunk: found \(input.count - offset) more bytes.")
            case .sizeLine:
                guard let text = try takeLine(limit: S3BodyDecoder.maxSizeLine, what: "chunk-size line") else { continue }
                try startChunk(text)
            case .data:
                let n = min(chunkSize - chunk.count, input.count - offset)
                chunk.append(contentsOf: input[offset..<(offset + n)])
                offset += n
                if chunk.count == chunkSize { state = .dataEnd }
            case .dataEnd:
                let expected = crlfSeen == 0 ? UInt8(ascii: "\r") : UInt8(ascii: "\n")
                guard input[offset] == expected else {
                    throw S3Error.incompleteBody(
                        "The aws-chunked body is malformed: expected CRLF after chunk \(chunkIndex + 1)'s \(chunkSize) bytes, found byte 0x\(Hex.encode([input[offset]])) (a chunk longer than its size?).")
                }
                offset += 1
                crlfSeen += 1
                guard crlfSeen == 2 else { continue }
                crlfSeen = 0
                if chunkSize == 0 {
                    try checkSignature(of: [])
                    state = .done
                    continue
                }
                try checkSignature(of: chunk)
                decoded += chunkSize
                chunkIndex += 1
                state = .sizeLine
                let out = chunk
                chunk = []
                return out
            case .trailer:
                guard let text = try takeLine(limit: S3BodyDecoder.maxTrailerLine, what: "trailer line") else { continue }
                trailerBytes += text.count + 2
                guard trailerBytes <= S3BodyDecoder.maxTrailerBytes else {
                    throw S3Error("MalformedTrailerError", status: 400,
                                  "The request contained trailing data that was not well-formed or did not conform to our published schema: the trailer is longer than \(S3BodyDecoder.maxTrailerBytes) bytes.")
                }
                try trailerLine(text)
            }
        }
        return nil
    }

    /// A whole line (without its CRLF), or nil when the input ends before its end.
    private mutating func takeLine(limit: Int, what: String) throws(S3Error) -> [UInt8]? {
        let end = input[offset...].firstIndex(of: UInt8(ascii: "\n"))
        let stop = end.map { $0 + 1 } ?? input.count
        guard line.count + (stop - offset) <= limit + 2 else {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: a \(what) is longer than \(limit) bytes (after \(decoded) decoded bytes).")
        }
        line.append(contentsOf: input[offset..<stop])
        offset = stop
        guard end != nil else { return nil }
        guard line.count >= 2, line[line.count - 2] == UInt8(ascii: "\r") else {
            throw S3Error.incompleteBody("The aws-chunked body is malformed: a \(what) ends with LF, not CRLF (after \(decoded) decoded bytes).")
        }
        let text = Array(line[..<(line.count - 2)])
        line = []
        return text
    }

    private mutating func startChunk(_ text: [UInt8]) throws(S3Error) {
        let semicolon = text.firstIndex(of: UInt8(ascii: ";"))
        let sizeText = text[..<(semicolon ?? text.count)]
        let shown = String(decoding: text.prefix(100), as: UTF8.self)
        guard !sizeText.isEmpty, sizeText.count <= 16, sizeText.allSatisfy({ HexDigits.value($0) != nil }) else {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: expected a chunk-size line \"<hex size>\(signing == nil ? "" : ";chunk-signature=<signature>")\", found \"\(shown)\".")
        }
        var size = 0
        for digit in sizeText {
            size = size << 4 | Int(HexDigits.value(digit)!)
            guard size <= S3BodyDecoder.maxChunkSize else {
                throw S3Error.invalidRequest(
                    "An aws-chunked chunk is too large: chunk \(chunkIndex + 1) declares \(String(decoding: sizeText, as: UTF8.self)) (hex) bytes, at most \(S3BodyDecoder.maxChunkSize) are accepted.")
            }
        }
        if signing != nil {
            let prefix = Array(";chunk-signature=".utf8)
            guard let semicolon, text.count == semicolon + prefix.count + 64,
                  Array(text[semicolon..<(semicolon + prefix.count)]) == prefix else {
                throw S3Error.incompleteBody(
                    "The aws-chunked body is malformed: expected a chunk-size line \"<hex size>;chunk-signature=<64 hex digits>\", found \"\(shown)\".")
            }
            chunkSignature = String(decoding: text[(semicolon + prefix.count)...], as: UTF8.self)
        } else if semicolon != nil {
            throw S3Error.incompleteBody(
                "The aws-chunked body is malformed: an unsigned chunk-size line is \"<hex size>\" alone, found \"\(shown)\".")
        }
        guard size <= decodedLength - decoded else {
            throw S3Error.invalidRequest(
                "The aws-chunked body carries more than x-amz-decoded-content-length announced: chunk \(chunkIndex + 1) declares \(size) bytes, and only \(decodedLength - decoded) of the \(decodedLength) remain.")
        }
        chunkSize = size
        chunk = []
        // Reserved as the data comes beyond 1 MiB: a size line alone must not cost 16 MiB.
        chunk.reserveCapacity(min(size, 1 << 20))
        if size == 0 && trailerMode {
            try checkSignature(of: [])
            state = .trailer
        } else {
            state = size == 0 ? .dataEnd : .data
        }
    }

    private mutating func checkSignature(of data: [UInt8]) throws(S3Error) {
        guard let signing else { return }
        let stringToSign = "AWS4-HMAC-SHA256-PAYLOAD\n\(signing.amzDate)\n\(signing.scope)\n\(previousSignature)\n\(SigV4Verifier.emptySHA256)\n\(try SigV4Verifier.sha256Hex(data))"
        let computed = Hex.encode(try SigV4Verifier.hmac(Array(stringToSign.utf8), key: signing.key))
        guard SigV4Verifier.constantTimeEqual(computed, chunkSignature) else {
            throw S3Error("SignatureDoesNotMatch", status: 403,
                          "The request signature we calculated does not match the signature you provided: chunk \(chunkIndex + 1) (\(data.count) bytes, after \(decoded) decoded bytes) has chunk-signature \(chunkSignature), which does not sign its data chained from the previous signature.",
                          fields: [("StringToSign", stringToSign), ("SignatureProvided", chunkSignature)])
        }
        previousSignature = computed
    }

    private mutating func trailerLine(_ text: [UInt8]) throws(S3Error) {
        if text.isEmpty {
            if let signing {
                guard let provided = trailerSignature else {
                    throw S3Error("MalformedTrailerError", status: 400,
                                  "The request contained trailing data that was not well-formed or did not conform to our published schema: the signed trailer has no x-amz-trailer-signature line.")
                }
                let stringToSign = "AWS4-HMAC-SHA256-TRAILER\n\(signing.amzDate)\n\(signing.scope)\n\(previousSignature)\n\(try SigV4Verifier.sha256Hex(trailerCanonical))"
                let computed = Hex.encode(try SigV4Verifier.hmac(Array(stringToSign.utf8), key: signing.key))
                guard SigV4Verifier.constantTimeEqual(computed, provided) else {
                    throw S3Error("SignatureDoesNotMatch", status: 403,
                                  "The request signature we calculated does not match the signature you provided: the trailer's x-amz-trailer-signature \(provided.prefix(64)) does not sign its lines chained from the last chunk's signature.",
                                  fields: [("StringToSign", stringToSign), ("SignatureProvided", String(provided.prefix(64)))])
                }
            }
            state = .done
            return
        }
        if trailerSignature != nil {
            throw S3Error("MalformedTrailerError", status: 400,
                          "The request contained trailing data that was not well-formed or did not conform to our published schema: a line follows x-amz-trailer-signature, which must be the trailer's last.")
        }
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else {
            throw S3Error("MalformedTrailerError", status: 400,
                          "The request contained trailing data that was not well-formed or did not conform to our published schema: expected \"name:value\", found \"\(String(decoding: text.prefix(100), as: UTF8.self))\".")
        }
        let name = ASCIIText.trimmed(String(decoding: text[..<colon], as: UTF8.self)).lowercased()
        let value = ASCIIText.trimmed(String(decoding: text[(colon + 1)...], as: UTF8.self))
        if name == "x-amz-trailer-signature" {
            guard signing != nil else {
                throw S3Error("MalformedTrailerError", status: 400,
                              "The request contained trailing data that was not well-formed or did not conform to our published schema: an unsigned trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER) carries x-amz-trailer-signature.")
            }
            trailerSignature = value
            return
        }
        trailerCanonical += text
        trailerCanonical.append(UInt8(ascii: "\n"))
        trailers.append((name: name, value: value))
    }
}
