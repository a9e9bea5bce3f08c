import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardHTTP

/// A flexible checksum S3 keeps with an object or a part (`x-amz-checksum-crc32` ...):
/// the algorithm, the value as S3 writes it (base64 of the digest; `-N` after it for the
/// composite checksum of an object of N parts), and its type.
///
/// Where it is kept: a value the request's header names is known before the body, so it
/// goes into the object's metadata under ``metadataKey`` with the bytes it describes. A
/// value that comes in the body's trailer is known only once the body has ended, after
/// the storage's `put` has taken the metadata; it is then written beside the object as a
/// record that names the storage ETag it describes (``S3ChecksumRecord``), as the part
/// manifest does, so a replaced object never answers another's checksum.
struct S3Checksum: Sendable, Equatable {
    enum Kind: String, Sendable {
        case fullObject = "FULL_OBJECT"
        case composite = "COMPOSITE"
    }

    var algorithm: ChecksumAlgorithm
    var value: String
    var type: Kind

    static let metadataKey = S3Namespace.reservedMetadataPrefix + "checksum"

    /// `crc32 FULL_OBJECT AAAAAA==`: printable ASCII, as metadata must be.
    var stored: String { "\(algorithm.rawValue) \(type.rawValue) \(value)" }

    init(algorithm: ChecksumAlgorithm, value: String, type: Kind) {
        self.algorithm = algorithm
        self.value = value
        self.type = type
    }

    init?(stored text: some StringProtocol) {
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 3, let algorithm = ChecksumAlgorithm(rawValue: String(words[0])),
              let type = Kind(rawValue: String(words[1])), !words[2].isEmpty else { return nil }
        self.init(algorithm: algorithm, value: String(words[2]), type: type)
    }

    /// The element S3's XML names it by (`ChecksumCRC32`).
    var element: String { "Checksum" + algorithm.displayName }

    /// The answer's headers: `x-amz-checksum-crc32` and `x-amz-checksum-type`.
    var answerHeaders: [(String, String)] { [(algorithm.headerName, value), ("x-amz-checksum-type", type.rawValue)] }

    /// The digest's bytes; nil for a composite value (its `-N`) or text that is not base64.
    var digest: [UInt8]? {
        guard let bytes = Base64.decode(value), bytes.count == algorithm.byteCount else { return nil }
        return bytes
    }

    /// The checksum a request's header names, known before its body (a trailer's is not).
    static func declared(in headers: HTTPHeaders) -> S3Checksum? {
        for algorithm in ChecksumAlgorithm.allCases {
            if let value = headers[algorithm.headerName] {
                return S3Checksum(algorithm: algorithm, value: ASCIIText.trimmed(value), type: .fullObject)
            }
        }
        return nil
    }

    /// The checksum the body was checked against, from a header or the trailer, once it
    /// has ended.
    static func verified(_ checksums: VerifiedChecksums) -> S3Checksum? {
        for (name, value) in checksums.all {
            guard name.hasPrefix("x-amz-checksum-"), let algorithm = ChecksumAlgorithm(rawValue: String(name.dropFirst(15))) else { continue }
            return S3Checksum(algorithm: algorithm, value: value, type: .fullObject)
        }
        return nil
    }

    /// `x-amz-checksum-algorithm` and `x-amz-checksum-type` of a CreateMultipartUpload (or
    /// a PostObject form), checked as S3 checks them; nil when neither is given.
    static func requested(algorithm text: String?, type typeText: String?) throws(S3Error) -> (algorithm: ChecksumAlgorithm, type: Kind)? {
        guard let text else {
            if let typeText {
                throw S3Error.invalidRequest("The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header: found x-amz-checksum-type \(typeText.prefix(20)) alone.")
            }
            return nil
        }
        guard let algorithm = ChecksumAlgorithm(rawValue: text.lowercased()) else {
            throw S3Error.invalidRequest("Checksum algorithm provided is unsupported: expected one of CRC32, CRC32C, CRC64NVME, SHA1, SHA256, found \"\(text.prefix(20))\".")
        }
        let type: Kind
        if let typeText {
            guard let given = Kind(rawValue: typeText.uppercased()) else {
                throw S3Error.invalidRequest("Value for x-amz-checksum-type header is invalid: expected FULL_OBJECT or COMPOSITE, found \"\(typeText.prefix(20))\".")
            }
            type = given
        } else {
            // AWS's defaults: CRC64NVME is a full-object checksum, the others composite.
            type = algorithm == .crc64nvme ? .fullObject : .composite
        }
        if type == .fullObject, algorithm == .sha1 || algorithm == .sha256 {
            throw S3Error.invalidRequest("The FULL_OBJECT checksum type cannot be used with the \(algorithm.rawValue) checksum algorithm: expected CRC32, CRC32C or CRC64NVME, or the COMPOSITE type.")
        }
        if type == .composite, algorithm == .crc64nvme {
            throw S3Error.invalidRequest("The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm: expected FULL_OBJECT.")
        }
        return (algorithm, type)
    }

    /// The checksum of an object made of `parts` (each one's full checksum and size, in
    /// order): COMPOSITE is the algorithm over the parts' digests, `-N` after it; FULL_OBJECT
    /// (a CRC) is the CRC of the whole, combined from the parts' without reading them.
    static func ofParts(_ parts: [(checksum: S3Checksum, size: Int)], algorithm: ChecksumAlgorithm, type: Kind) throws(S3Error) -> S3Checksum {
        var digests: [[UInt8]] = []
        digests.reserveCapacity(parts.count)
        for (index, part) in parts.enumerated() {
            guard part.checksum.algorithm == algorithm, let digest = part.checksum.digest else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found: expected part \(index + 1) of the list to have a \(algorithm.displayName) checksum, found \(part.checksum.algorithm.displayName) \(part.checksum.value).")
            }
            digests.append(digest)
        }
        switch type {
        case .composite:
            let digest: [UInt8]
            do {
                digest = try algorithm.digest(of: digests.flatMap { $0 })
            } catch {
                throw S3Error.internalError("Could not compute the composite checksum: \(error).")
            }
            return S3Checksum(algorithm: algorithm, value: Base64.encode(digest) + "-\(parts.count)", type: .composite)
        case .fullObject:
            guard let polynomial = algorithm.reflectedPolynomial else {
                throw S3Error.invalidRequest("The FULL_OBJECT checksum type cannot be used with the \(algorithm.rawValue) checksum algorithm.")
            }
            let width = algorithm.byteCount * 8
            var crc: UInt64 = 0
            var first = true
            for (digest, part) in zip(digests, parts) {
                let value = digest.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                crc = first ? value : CRCCombine.combine(crc, value, lengthOfSecond: part.size, polynomial: polynomial, width: width)
                first = false
            }
            return S3Checksum(algorithm: algorithm, value: Base64.encode(CRCBytes.bigEndian(crc, count: algorithm.byteCount)), type: .fullObject)
        }
    }
}

extension ChecksumAlgorithm {
    /// The reflected polynomial of the CRCs (nil for the hashes).
    var reflectedPolynomial: UInt64? {
        switch self {
        case .crc32: 0xEDB8_8320
        case .crc32c: 0x82F6_3B78
        case .crc64nvme: 0x9A6C_9329_AC4B_C9B5
        case .sha1, .sha256: nil
        }
    }

    /// The algorithm's digest of `bytes`, as S3 writes it (big-endian for the CRCs).
    func digest(of bytes: [UInt8]) throws -> [UInt8] {
        switch self {
        case .crc32: CRCBytes.bigEndian(UInt64(CRC32.checksum(bytes)), count: 4)
        case .crc32c: CRCBytes.bigEndian(UInt64(CRC32C.checksum(bytes)), count: 4)
        case .crc64nvme: CRCBytes.bigEndian(CRC64NVME.checksum(bytes), count: 8)
        case .sha1: try SHA1Hasher.hash(bytes)
        case .sha256: try SHA256Hasher.hash(bytes)
        }
    }
}

/// The CRC of two pieces one after the other from the CRC of each and the second's
/// length, for the reflected CRCs whose register starts and ends inverted (CRC-32,
/// CRC-32C, CRC-64/NVME): zlib's `crc32_combine`, over GF(2) matrices of `width` bits.
enum CRCCombine {
    static func combine(_ first: UInt64, _ second: UInt64, lengthOfSecond length: Int, polynomial: UInt64, width: Int) -> UInt64 {
        guard length > 0 else { return first }
        func times(_ matrix: [UInt64], _ vector: UInt64) -> UInt64 {
            var sum: UInt64 = 0
            var vector = vector
            var row = 0
            while vector != 0 {
                if vector & 1 != 0 { sum ^= matrix[row] }
                vector >>= 1
                row += 1
            }
            return sum
        }
        func square(_ matrix: [UInt64]) -> [UInt64] { matrix.map { times(matrix, $0) } }
        // The operator that feeds one zero bit through the register, then two, then four.
        var odd = [UInt64](repeating: 0, count: width)
        odd[0] = polynomial
        for n in 1..<width { odd[n] = UInt64(1) << UInt64(n - 1) }
        var even = square(odd)
        odd = square(even)
        var crc = first
        var remaining = length
        // Each round squares the operator (one zero byte, two, four ...) and applies it
        // for each set bit of the length.
        repeat {
            even = square(odd)
            if remaining & 1 != 0 { crc = times(even, crc) }
            remaining >>= 1
            if remaining == 0 { break }
            odd = square(even)
            if remaining & 1 != 0 { crc = times(odd, crc) }
            remaining >>= 1
        } while remaining != 0
        return crc ^ second
    }
}

/// A checksum known only after its object was stored (it came in the body's trailer),
/// kept beside the object: `plugboard-s3-checksum 1`, then `etag <storage ETag>` (the
/// object it describes) and `checksum <S3Checksum.stored>`.
enum S3ChecksumRecord {
    static let header = "plugboard-s3-checksum 1"

    static func encoded(_ checksum: S3Checksum, etag: String) -> [UInt8] {
        Array((header + "\netag " + etag + "\nchecksum " + checksum.stored + "\n").utf8)
    }

    /// The checksum, when the record describes the object whose storage ETag is `etag`.
    static func parse(_ content: [UInt8], etag: String) -> S3Checksum? {
        guard let fields = MultipartText.fields(content, header: header) else { return nil }
        var describes = false
        var checksum: S3Checksum?
        for (name, values) in fields {
            if name == "etag" { describes = values.count == 1 && values[0] == etag }
            if name == "checksum" { checksum = S3Checksum(stored: values.joined(separator: " ")) }
        }
        return describes ? checksum : nil
    }

    /// Writes `checksum` beside the object or part at `recordKey`, describing `info`.
    static func write(_ context: S3Context, _ checksum: S3Checksum, describing info: ObjectInfo, at recordKey: String) async throws {
        _ = try await context.storage.put(recordKey, data: encoded(checksum, etag: info.etag), contentType: "text/plain", metadata: [:])
    }

    /// The checksum kept for `info`: in its metadata, else in the record at `recordKey`
    /// when that describes it; nil when none was kept.
    static func stored(_ context: S3Context, for info: ObjectInfo, recordKey: String) async throws -> S3Checksum? {
        if let text = info.metadata[S3Checksum.metadataKey] { return S3Checksum(stored: text) }
        do {
            let content = try await context.storage.get(recordKey, range: nil).body.collect(upTo: 4096)
            return parse(content, etag: info.etag)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
    }
}

/// The checksum of a body as its chunks pass, for a part S3 computes one of itself
/// (UploadPartCopy into an upload made with an algorithm: the client sends no bytes, so it
/// sends no checksum).
///
/// `@unchecked Sendable`: read by one task at a time, one chunk after another (the
/// ObjectBody contract).
final class RunningChecksum: @unchecked Sendable {
    let algorithm: ChecksumAlgorithm
    private var crc32 = CRC32()
    private var crc32c = CRC32C()
    private var crc64 = CRC64NVME()
    private var sha1: SHA1Hasher?
    private var sha256: SHA256Hasher?
    private var upstream: ObjectBody.Iterator

    init(_ algorithm: ChecksumAlgorithm, over body: ObjectBody) throws {
        self.algorithm = algorithm
        upstream = body.makeAsyncIterator()
        if algorithm == .sha1 { sha1 = try SHA1Hasher() }
        if algorithm == .sha256 { sha256 = try SHA256Hasher() }
    }

    /// The body, each chunk counted as it passes.
    func body(length: Int?) -> ObjectBody { ObjectBody(length: length) { try await self.next() } }

    private func next() async throws -> [UInt8]? {
        guard let chunk = try await upstream.next() else { return nil }
        switch algorithm {
        case .crc32: crc32.update(chunk)
        case .crc32c: crc32c.update(chunk)
        case .crc64nvme: crc64.update(chunk)
        case .sha1: sha1?.update(chunk)
        case .sha256: sha256?.update(chunk)
        }
        return chunk
    }

    /// The checksum of every byte that passed; once, after the body has ended.
    func finish() throws -> S3Checksum {
        var digest: [UInt8] = []
        switch algorithm {
        case .crc32: digest = crc32.bytes
        case .crc32c: digest = crc32c.bytes
        case .crc64nvme: digest = crc64.bytes
        case .sha1: if let hasher = sha1.take() { digest = try hasher.finalize() }
        case .sha256: if let hasher = sha256.take() { digest = try hasher.finalize() }
        }
        return S3Checksum(algorithm: algorithm, value: Base64.encode(digest), type: .fullObject)
    }
}
