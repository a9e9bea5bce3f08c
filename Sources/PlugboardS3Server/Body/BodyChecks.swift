import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTP

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
            guard values.count == 1, let bytes = Base64.decode(value) else {
                throw S3Error.invalidRequest(
                    "Value for \(algorithm.headerName) header is invalid: expected the base64 of \(algorithm.byteCount) bytes, found \"\(text.prefix(64))\"\(values.count > 1 ? " (and \(values.count - 1) more)" : "").")
            }
            // A digest of another length cannot be the body's: a mismatch, as S3 answers it.
            guard bytes.count == algorithm.byteCount else { throw Self.wrongLength(algorithm, value, bytes.count, what: "header") }
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

    /// S3's `BadDigest` for a value that is base64 but not of the algorithm's length (a
    /// value that is not base64 at all is `InvalidRequest`).
    static func wrongLength(_ algorithm: ChecksumAlgorithm, _ value: String, _ count: Int, what: String) -> S3Error {
        S3Error.badDigest(
            "Value for \(algorithm.headerName) \(what) is invalid: expected the base64 of \(algorithm.byteCount) bytes (a \(algorithm.displayName)), found \(count) bytes (\"\(value.prefix(64))\"), which cannot be the body's.")
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
            guard let bytes = Base64.decode(value) else {
                throw S3Error.invalidRequest(
                    "Value for \(algorithm.headerName) trailing header is invalid: expected the base64 of \(algorithm.byteCount) bytes, found \"\(value.prefix(64))\".")
            }
            guard bytes.count == algorithm.byteCount else { throw Self.wrongLength(algorithm, value, bytes.count, what: "trailing header") }
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
