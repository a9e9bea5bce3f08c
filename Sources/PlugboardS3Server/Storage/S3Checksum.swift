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

    // MARK: CompleteMultipartUpload

    /// The checksum a CompleteMultipartUpload gives the object: the upload's algorithm and
    /// type (`recorded`, from its CreateMultipartUpload); for an upload made without one,
    /// the algorithm of the Complete's own `x-amz-checksum-*` (its parts must then all have
    /// kept that one), FULL_OBJECT for a CRC and COMPOSITE for SHA-1 and SHA-256 unless its
    /// `x-amz-checksum-type` says otherwise; nil when neither names one.
    ///
    /// A Complete's `x-amz-checksum-type` must be the upload's, and its `x-amz-checksum-*`
    /// of the upload's algorithm (400 `InvalidRequest`, as S3 answers both).
    static func onCompletion(recorded: (algorithm: ChecksumAlgorithm, type: Kind)?,
                             headers: HTTPHeaders) throws(S3Error) -> (algorithm: ChecksumAlgorithm, type: Kind)? {
        let sent = declared(in: headers)
        let typeText = headers["x-amz-checksum-type"].map { ASCIIText.trimmed($0) }
        var type: Kind?
        if let typeText {
            guard let given = Kind(rawValue: typeText.uppercased()) else {
                throw S3Error.invalidRequest("Value for x-amz-checksum-type header is invalid: expected FULL_OBJECT or COMPOSITE, found \"\(typeText.prefix(20))\".")
            }
            type = given
        }
        if let recorded {
            if let type, type != recorded.type {
                throw S3Error.invalidRequest(
                    "The upload was created using the \(recorded.type.rawValue) checksum mode. The complete request must use the same checksum mode: found x-amz-checksum-type \(type.rawValue).")
            }
            if let sent, sent.algorithm != recorded.algorithm {
                throw S3Error.invalidRequest(
                    "The upload was created using a \(recorded.algorithm.displayName) checksum: expected x-amz-checksum-\(recorded.algorithm.rawValue) on the Complete, if any, found \(sent.algorithm.headerName).")
            }
            return recorded
        }
        guard let sent else {
            if let typeText {
                throw S3Error.invalidRequest("The x-amz-checksum-type header can only be used with a checksum: the upload was created without an algorithm and the Complete names none (found x-amz-checksum-type \(typeText.prefix(20)) alone).")
            }
            return nil
        }
        return try requested(algorithm: sent.algorithm.rawValue, type: (type ?? (sent.algorithm.reflectedPolynomial != nil ? .fullObject : .composite)).rawValue)
    }

    /// Refuses (400 `BadDigest`, as S3 answers it) a Complete's `x-amz-checksum-*` that is
    /// not `whole`, the parts' checksum. A composite value may be sent with its `-N` or
    /// without it.
    static func checkSentOnCompletion(_ headers: HTTPHeaders, whole: S3Checksum) throws(S3Error) {
        guard let sent = declared(in: headers), sent.algorithm == whole.algorithm else { return }
        let matches = sent.value == whole.value
            || (whole.type == .composite && whole.value.hasPrefix(sent.value) && whole.value.dropFirst(sent.value.count).hasPrefix("-")
                && sent.digest != nil)
        guard matches else {
            throw S3Error.badDigest(
                "The \(sent.algorithm.displayName) you specified did not match the calculated checksum: expected \(whole.value) (the parts' \(whole.type.rawValue) checksum), found \(sent.value.prefix(80)).")
        }
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
