import PlugboardCrypto

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
